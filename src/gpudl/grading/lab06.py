"""Checks for lab06_lstm_bptt.

Each check takes the student's function and ``hidden=False`` (the public cases shown in the
released notebook) or ``hidden=True`` (cases drawn from the instructor's secret seed, plus edge
cases). Three kinds of expected answers:

- the lecture's worked example, to the digits the slides print (``gpudl.lstm.lecture_printed``),
  within ``LECTURE_TOL`` because the slides round every intermediate;
- independent oracles for gradients: central differences of the forward pass (float64) and
  ``torch.nn.LSTM``'s autograd with the same weights;
- the package's reference (``gpudl.lstm``), which the student's code may not call.

An exercise that calls an earlier one (the sequence forward calls ``lstm_cell_forward``) is
checked with the package's version of the earlier function put in its place for the duration
of the check, so a mistake in one exercise costs that exercise's points only. That swap happens
in the student's namespace, so it is done by a ``@student_side`` adapter
(``_with_package_versions``) around the call; everything else crosses as plain data (arrays,
and the caches as dicts of arrays).
"""
from __future__ import annotations

import contextlib
import copy
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from .. import lstm
from . import (Case, GradingError, assert_close, call_student, check_cases, check_choice, exercise, numerical_gradient,
               rng, run_student, student_side, tolerance)

LAB = "lab06"
LECTURE_TOL = 1e-4
ABS_FLOOR = 1e-12     # inputs are O(1): rounding differences stay far below this
CACHE_KEYS = ("x", "h_prev", "c_prev", "a", "i", "f", "o", "c", "W", "U")
GRAD_NAMES = ("dx", "dh_prev", "dc_prev", "dW", "dU", "db")
SEQ_GRAD_NAMES = ("dx", "dh0", "dc0", "dW", "dU", "db")
AUTOGRAD = ("torch.autograd.grad", "torch.autograd.backward")
TORCH_LSTM = ("torch.nn.LSTM", "torch.nn.LSTMCell")

_GRAD_HINTS = {
    "dx": "dx = dz W, with dz the (N, 4H) gate gradients stacked a, i, f, o",
    "dh_prev": "dh_prev = dz U: the gates of this step read h_prev through U",
    "dh0": "the gradient reaching h_{t-1} is dz_t U; it must be added to dout[t-1] at the step before",
    "dc_prev": "dc_prev = (delta state) * f: the cell state goes back through the forget gate only",
    "dc0": "the cell-state gradient must flow back in time: dc_prev of step t is the incoming dc of step t-1",
    "dW": "dW = dz^T x (summed over the batch, and over all steps in the sequence)",
    "dU": "dU pairs this step's gate gradients with h_{t-1} (the cache's h_prev), summed over EVERY step, "
          "including t = 0 when h0 is not zero",
    "db": "db is dz summed over the batch (and over all steps)",
}


# --- helpers -----------------------------------------------------------------------------

def _lecture_close(actual: Any, printed: Any, name: str, where: str) -> None:
    """Within LECTURE_TOL of the slides' printed numbers, with a message that shows both."""
    __tracebackhide__ = True
    exp = np.asarray(printed, dtype=float)
    try:
        act = np.asarray(actual.detach().cpu() if hasattr(actual, "detach") else actual, dtype=float)
    except (TypeError, ValueError) as exc:
        raise GradingError(f"{where}: your {name} cannot be read as numbers: {exc}") from None
    if act.size != exp.size:
        raise GradingError(f"{where}: your {name} has shape {act.shape}, expected {exp.shape}")
    act = act.reshape(exp.shape)
    if np.isnan(act).any():
        raise GradingError(f"{where}: your {name} has NaNs: {np.round(act, 5).tolist()}")
    if np.all(np.abs(act - exp) <= LECTURE_TOL):
        return
    raise GradingError(f"{where}: your {name} is {np.round(act, 5).tolist()}, the lecture prints "
                       f"{exp.tolist()} (allowed difference {LECTURE_TOL:g}: the slides round to 4-5 digits)")


def _unpack(result: Any, n: int, names: Sequence[str], where: str) -> tuple:
    __tracebackhide__ = True
    if result is None:
        raise GradingError(f"{where} returned None: did you forget a `return`?")
    if not isinstance(result, (tuple, list)) or len(result) != n:
        got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"a {type(result).__name__}"
        raise GradingError(f"{where} must return {n} values ({', '.join(names)}), got {got}")
    return tuple(result)


def _check_cache(cache: Any, ref: Mapping[str, Any], where: str, k: int = 1) -> None:
    __tracebackhide__ = True
    if not isinstance(cache, Mapping):
        raise GradingError(f"{where}: the cache must be a dict with the keys {', '.join(CACHE_KEYS)}, "
                           f"got a {type(cache).__name__}")
    missing = [k for k in CACHE_KEYS if k not in cache]
    if missing:
        raise GradingError(f"{where}: the cache lacks the key(s) {missing}; lstm_cell_backward needs "
                           f"{', '.join(CACHE_KEYS)}")
    for key in CACHE_KEYS:
        try:
            _close(cache[key], ref[key], f"cache[{key!r}]", k=k)
        except GradingError as exc:
            gate = {"a": "a = tanh(z_a), the first block of z", "i": "i = sigmoid(z_i), the second block",
                    "f": "f = sigmoid(z_f), the third block", "o": "o = sigmoid(z_o), the fourth block"}.get(key, "")
            raise GradingError(f"{where}:\n{exc}" + (f"\n({gate})" if gate else "")) from None


def _close(actual: Any, expected: Any, name: str, *, k: int = 1, rtol: float | None = None,
           atol: float | None = None, floor: float = ABS_FLOOR, hints: Mapping[float, str] | None = None) -> None:
    """``assert_close`` in float64 with an absolute floor: a value near zero (a cancellation, a
    gradient that is small in a tiny case) is judged against ``floor``, not only against itself."""
    __tracebackhide__ = True
    default_rtol, default_atol = tolerance("fp64", k)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    e = np.asarray(expected.detach().cpu() if hasattr(expected, "detach") else expected, dtype=float)
    finite = e[np.isfinite(e)]
    scale = float(np.sqrt(np.mean(finite ** 2))) if finite.size else 1.0
    scale = scale if scale > 0 else 1.0
    assert_close(actual, e, name=name, rtol=rtol, atol=max(atol, floor / scale), hints=hints)


def _compare_grads(actual: Sequence[Any], expected: Sequence[Any], names: Sequence[str], where: str,
                   **tol: Any) -> None:
    __tracebackhide__ = True
    for name, a, e in zip(names, actual, expected):
        try:
            _close(a, e, name, **tol)
        except GradingError as exc:
            hint = _GRAD_HINTS.get(name, "")
            raise GradingError(f"{where}:\n{exc}" + (f"\nhint: {hint}" if hint else "")) from None


@contextlib.contextmanager
def _with_package(fn: Callable, **substitutes: Callable) -> Iterator[None]:
    """Put the package's versions of earlier exercises in the student's namespace while ``fn``
    is checked (and restore the student's own afterwards)."""
    namespace = getattr(fn, "__globals__", None)
    saved: dict[str, Any] = {}
    if isinstance(namespace, dict):
        for name, sub in substitutes.items():
            if name in namespace:
                saved[name] = namespace[name]
                namespace[name] = sub
    try:
        yield
    finally:
        for name, value in saved.items():
            namespace[name] = value


# The package's versions of the lab's functions, called from this module (so the guard, which
# refuses calls of a forbidden reference from the student's code, lets them through).
def _pkg_cell_forward(x_t, h_prev, c_prev, W, U, b):
    return lstm.lstm_cell_forward(x_t, h_prev, c_prev, W, U, b)


def _pkg_cell_backward(dh, dc, cache):
    return lstm.lstm_cell_backward(dh, dc, cache)


def _pkg_forward(x, h0, c0, W, U, b):
    return lstm.lstm_forward_stepwise(x, h0, c0, W, U, b)


def _pkg_backward(dout, caches, dh_last=None, dc_last=None):
    return lstm.lstm_backward_stepwise(dout, caches, dh_last, dc_last)


def _pkg_sgd_step(params, grads, lr):
    return lstm.sgd_step(params, grads, lr)


_PACKAGE_VERSIONS = {"lstm_cell_forward": _pkg_cell_forward, "lstm_cell_backward": _pkg_cell_backward,
                     "lstm_forward": _pkg_forward, "lstm_backward": _pkg_backward, "sgd_step": _pkg_sgd_step}


@student_side
def _with_package_versions(fn: Callable, names: Sequence[str], *args: Any) -> Any:
    """(Student side) ``fn(*args)`` with the package's versions of the earlier exercises
    ``names`` in the student's namespace for the duration of the call."""
    with _with_package(fn, **{name: _PACKAGE_VERSIONS[name] for name in names}):
        return fn(*args)


def _random_lstm(g: np.random.Generator, T: int, N: int, D: int, H: int, scale: float = 1.0,
                 zero_state: bool = False) -> tuple[np.ndarray, ...]:
    x = g.standard_normal((T, N, D))
    h0 = np.zeros((N, H)) if zero_state else 0.5 * g.standard_normal((N, H))
    c0 = np.zeros((N, H)) if zero_state else g.standard_normal((N, H))
    s = scale / np.sqrt(D + H)
    W, U, b = s * g.standard_normal((4 * H, D)), s * g.standard_normal((4 * H, H)), 0.5 * g.standard_normal(4 * H)
    return x, h0, c0, W, U, b


def _lecture_args() -> tuple[dict, tuple]:
    e = lstm.lecture_example()
    return e, (e["x"], e["h0"], e["c0"], e["W"], e["U"], e["b"])


# --- 1. one step forward ---------------------------------------------------------------------

_FORWARD_FORBID = [lstm.lstm_cell_forward, lstm.lstm_forward, lstm.lstm_forward_stepwise,
                   lstm.lstm_forward_per_gate, *TORCH_LSTM]


@exercise
def lstm_cell_forward(fn: Callable, hidden: bool = False) -> None:
    """``fn(x_t, h_prev, c_prev, W, U, b)`` -> ``h, c, cache``."""
    __tracebackhide__ = True
    label = "one LSTM step"
    names = ("h", "c", "cache")
    if not hidden:
        p = lstm.lecture_printed()
        _, (x, h0, c0, W, U, b) = _lecture_args()
        steps = [(0, x[0], h0, c0, p["out_0"], p["state_0"]),
                 (1, x[1], np.full((1, 1), p["out_0"]), np.full((1, 1), p["state_0"]), p["out_1"], p["state_1"])]
        for t, x_t, h_prev, c_prev, out, state in steps:
            where = f"the lecture's example at t = {t}"
            h, c, cache = _unpack(call_student(fn, x_t.copy(), h_prev.copy(), c_prev.copy(), W.copy(), U.copy(), b.copy(),
                                               forbid=_FORWARD_FORBID, label=label, what="lstm_cell_forward"),
                                  3, names, where)
            if isinstance(cache, Mapping) and all(k in cache for k in "aifo"):
                _lecture_close([np.asarray(cache[k]).ravel()[0] for k in "aifo"], p[f"gates_{t}"],
                            "gates (a, i, f, o) in the cache", where)
            _lecture_close(c, state, f"c (the lecture's state_{t})", where)
            _lecture_close(h, out, f"h (the lecture's out_{t})", where)
        cases = [_random_lstm(np.random.default_rng(6), 1, 3, 4, 2)]
    else:
        g = rng(f"{LAB}.lstm_cell_forward")
        cases = [_random_lstm(g, 1, int(g.integers(1, 7)), int(g.integers(1, 8)), int(g.integers(1, 7)),
                              scale=float(g.uniform(0.5, 3))) for _ in range(4)]
        cases.append(_random_lstm(g, 1, 2, 3, 1))                     # H = 1
        cases.append(_random_lstm(g, 1, 3, 2, 4, scale=40.0))         # saturated gates: no overflow, no NaN
    for x, h0, c0, W, U, b in cases:
        where = f"lstm_cell_forward on a batch of N={h0.shape[0]}, D={x.shape[2]}, H={h0.shape[1]}"
        rh, rc, rcache = lstm.lstm_cell_forward(x[0], h0, c0, W, U, b)
        h, c, cache = _unpack(call_student(fn, x[0].copy(), h0.copy(), c0.copy(), W.copy(), U.copy(), b.copy(),
                                           forbid=_FORWARD_FORBID, label=label, what=where), 3, names, where)
        k = x.shape[2] + h0.shape[1] + 1          # the length of the sums behind each gate
        _check_cache(cache, rcache, where, k=k)
        _compare_grads((c, h), (rc, rh), ("c", "h"), where, k=k)


# --- 2. the sequence forward -----------------------------------------------------------------

@exercise
def lstm_forward(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, h0, c0, W, U, b)`` -> ``out, (h_T, c_T), caches`` (checked with the package's
    ``lstm_cell_forward`` in place of the student's)."""
    __tracebackhide__ = True
    label = "the sequence forward"
    if not hidden:
        p = lstm.lecture_printed()
        _, args = _lecture_args()
        where = "the lecture's two-step example"
        res = run_student(_with_package_versions, fn, ("lstm_cell_forward",), *(a.copy() for a in args),
                          forbid=_FORWARD_FORBID, label=label, what="lstm_forward")
        out, final, _ = _unpack(res, 3, ("out", "(h_T, c_T)", "caches"), where)
        _lecture_close(out, [p["out_0"], p["out_1"]], "out (the lecture's out_0, out_1)", where)
        h_T, c_T = _unpack(final, 2, ("h_T", "c_T"), f"{where}: the final states")
        _lecture_close(c_T, p["state_1"], "c_T (the lecture's state_1)", where)
        _lecture_close(h_T, p["out_1"], "h_T (the lecture's out_1)", where)
        cases = [_random_lstm(np.random.default_rng(61), 4, 3, 2, 3)]
    else:
        g = rng(f"{LAB}.lstm_forward")
        cases = [_random_lstm(g, int(g.integers(2, 8)), int(g.integers(1, 6)), int(g.integers(1, 6)),
                              int(g.integers(1, 6)), scale=float(g.uniform(0.5, 3))) for _ in range(4)]
        cases.append(_random_lstm(g, 1, 2, 3, 2))                    # a single step
    for args in cases:
        x, h0 = args[0], args[1]
        T, N, D = x.shape
        H = h0.shape[1]
        where = f"lstm_forward on T={T}, N={N}, D={D}, H={H} (h0, c0 not zero)"
        r_out, (r_h, r_c), r_caches = lstm.lstm_forward_stepwise(*args)
        res = run_student(_with_package_versions, fn, ("lstm_cell_forward",), *(a.copy() for a in args),
                          forbid=_FORWARD_FORBID, label=label, what=where)
        out, final, caches = _unpack(res, 3, ("out", "(h_T, c_T)", "caches"), where)
        h_T, c_T = _unpack(final, 2, ("h_T", "c_T"), f"{where}: the final states")
        k = T * (D + H + 1)                         # rounding differences grow along the sequence
        _compare_grads((out, h_T, c_T), (r_out, r_h, r_c), ("out", "h_T", "c_T"), where, k=k)
        if not isinstance(caches, (list, tuple)) or len(caches) != T:
            raise GradingError(f"{where}: caches must be a list of the T = {T} caches of lstm_cell_forward, "
                               f"got {type(caches).__name__}" + (f" of length {len(caches)}" if hasattr(caches, "__len__") else ""))
        for t in range(T):
            _check_cache(caches[t], r_caches[t], f"{where}, caches[{t}]", k=k)


# --- 3. FLOPs ----------------------------------------------------------------------------------

@exercise
def lstm_flops(fn: Callable, hidden: bool = False) -> None:
    """``fn(T, N, D, H)`` -> FLOPs of the forward pass's matrix products."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((2, 1, 2, 1), label="the lecture's example (T=2, N=1, D=2, H=1)"),
                 Case((64, 32, 256, 256), label="T=64, N=32, D=H=256")]
    else:
        g = rng(f"{LAB}.lstm_flops")
        cases = [Case(tuple(int(v) for v in (g.integers(1, 500), g.integers(1, 256), g.integers(1, 2048),
                                             g.integers(1, 2048)))) for _ in range(5)]
        cases.append(Case((1, 1, 1, 1)))
    check_cases(fn, lambda T, N, D, H: lstm.lstm_flops(T, N, D, H), cases, forbid=[lstm.lstm_flops],
                label="the LSTM's FLOPs", rtol=0.0, atol=0.0, dtype="int8",
                hints={0.25: "a factor of 1/4: four gates, each with its own rows of W and U",
                       0.5: "a factor of 1/2: a multiply-add is 2 FLOPs"})


# --- 4. one step backward --------------------------------------------------------------------

_BACKWARD_FORBID = [lstm.lstm_cell_backward, lstm.lstm_backward, lstm.lstm_backward_stepwise, *AUTOGRAD]


def _cell_central_differences(x, h_prev, c_prev, W, U, b, dh, dc, eps=1e-6):
    """Gradients of L = sum(dh * h) + sum(dc * c) by central differences (float64)."""
    args = [np.array(v, dtype=float) for v in (x, h_prev, c_prev, W, U, b)]

    def loss():
        h, c, _ = lstm.lstm_cell_forward(*args)
        return float(np.sum(dh * h) + np.sum(dc * c))

    return numerical_gradient(loss, args, eps)


@exercise
def lstm_cell_backward(fn: Callable, hidden: bool = False) -> None:
    """``fn(dh, dc, cache)`` -> ``dx, dh_prev, dc_prev, dW, dU, db`` (caches from the package's
    ``lstm_cell_forward``)."""
    __tracebackhide__ = True
    label = "one LSTM step backward"
    if not hidden:
        p = lstm.lecture_printed()
        _, (x, h0, c0, W, U, b) = _lecture_args()
        f0, f1 = p["gates_0"][2], p["gates_1"][2]
        _, _, cache1 = lstm.lstm_cell_forward(x[1], np.full((1, 1), p["out_0"]), np.full((1, 1), p["state_0"]), W, U, b)
        _, _, cache0 = lstm.lstm_cell_forward(x[0], h0, c0, W, U, b)
        steps = [
            (1, p["Delta_1"], 0.0, cache1,
             {"dx": p["delta_x_1"], "dh_prev": p["delta_out_prev_1"], "dc_prev": p["delta_state_1"] * f1,
              "dW": np.outer(p["delta_gates_1"], x[1, 0]), "dU": p["dU"].ravel(), "db": p["delta_gates_1"]}),
            (0, p["delta_out_0"], p["delta_state_1"] * f1, cache0,
             {"dx": p["delta_x_0"], "dh_prev": p["delta_out_prev_0"], "dc_prev": p["delta_state_0"] * f0,
              "dW": np.outer(p["delta_gates_0"], x[0, 0]), "dU": np.zeros(4), "db": p["delta_gates_0"]}),
        ]
        for t, dh, dc, cache, expected in steps:
            where = f"the lecture's backward path at t = {t} (dh = {float(dh):.5f}, dc = {float(dc):.5f})"
            res = call_student(fn, np.full((1, 1), dh), np.full((1, 1), dc), copy.deepcopy(cache),
                               forbid=_BACKWARD_FORBID, label=label, what="lstm_cell_backward")
            got = dict(zip(GRAD_NAMES, _unpack(res, 6, GRAD_NAMES, where)))
            _lecture_close(got["db"], expected["db"], "db (the lecture's delta gates: a, i, f, o)", where)
            for name in ("dc_prev", "dx", "dh_prev", "dW", "dU"):
                _lecture_close(got[name], expected[name], name, where)
        g = np.random.default_rng(62)
        cases = [(_random_lstm(g, 1, 3, 4, 2), g)]
    else:
        g = rng(f"{LAB}.lstm_cell_backward")
        cases = [(_random_lstm(g, 1, int(g.integers(1, 6)), int(g.integers(1, 6)), int(g.integers(1, 6)),
                               scale=float(g.uniform(0.5, 2.5))), g) for _ in range(3)]
        cases.append((_random_lstm(g, 1, 1, 1, 1), g))
    for (x, h0, c0, W, U, b), gg in cases:
        N, H = h0.shape
        where = f"lstm_cell_backward on N={N}, D={x.shape[2]}, H={H}"
        dh, dc = gg.standard_normal((N, H)), gg.standard_normal((N, H))
        _, _, cache = lstm.lstm_cell_forward(x[0], h0, c0, W, U, b)
        expected = lstm.lstm_cell_backward(dh, dc, cache)
        res = call_student(fn, dh.copy(), dc.copy(), copy.deepcopy(cache), forbid=_BACKWARD_FORBID, label=label, what=where)
        _compare_grads(_unpack(res, 6, GRAD_NAMES, where), expected, GRAD_NAMES, where,
                       k=N * (4 * H + x.shape[2] + H))
    if hidden:   # against central differences of the forward pass: no reference backward involved
        x, h0, c0, W, U, b = _random_lstm(g, 1, 2, 3, 2, scale=2.0)
        dh, dc = g.standard_normal((2, 2)), g.standard_normal((2, 2))
        numeric = _cell_central_differences(x[0], h0, c0, W, U, b, dh, dc)
        _, _, cache = lstm.lstm_cell_forward(x[0], h0, c0, W, U, b)
        where = "lstm_cell_backward against central differences of the forward pass"
        res = call_student(fn, dh.copy(), dc.copy(), cache, forbid=_BACKWARD_FORBID, label=label, what=where)
        _compare_grads(_unpack(res, 6, GRAD_NAMES, where), numeric, GRAD_NAMES, where, rtol=1e-6, atol=0.0,
                       floor=1e-7)


# --- 5. backpropagation through time ---------------------------------------------------------

def _sequence_central_differences(args, dout, dh_last, dc_last, eps=1e-6):
    args = [np.array(a, dtype=float) for a in args]

    def loss():
        out, (h_T, c_T) = lstm.lstm_forward_per_gate(*args)
        return float(np.sum(out * dout) + np.sum(h_T * dh_last) + np.sum(c_T * dc_last))

    return numerical_gradient(loss, args, eps)


def _torch_autograd(args, dout, dh_last, dc_last):
    """Gradients from torch.nn.LSTM's autograd with the same weights (float64, CPU)."""
    import torch

    x, h0, c0, W, U, b = args
    module = lstm.torch_lstm(W, U, b, dtype=torch.float64)
    tx, th, tc = (torch.tensor(v, requires_grad=True) for v in (x, h0, c0))
    out, (h_n, c_n) = module(tx, (th[None], tc[None]))
    loss = (out * torch.tensor(dout)).sum() + (h_n[0] * torch.tensor(dh_last)).sum() + (c_n[0] * torch.tensor(dc_last)).sum()
    loss.backward()
    dW, dU, db = lstm.from_torch({"weight_ih_l0": module.weight_ih_l0.grad, "weight_hh_l0": module.weight_hh_l0.grad,
                                  "bias_ih_l0": module.bias_ih_l0.grad})
    return tx.grad.numpy(), th.grad.numpy(), tc.grad.numpy(), dW, dU, db


@exercise
def lstm_backward(fn: Callable, hidden: bool = False) -> None:
    """``fn(dout, caches, dh_last=None, dc_last=None)`` -> ``dx, dh0, dc0, dW, dU, db`` (checked
    with the package's ``lstm_cell_backward`` in place of the student's)."""
    __tracebackhide__ = True
    label = "backpropagation through time"
    if not hidden:
        p = lstm.lecture_printed()
        _, args = _lecture_args()
        _, _, caches = lstm.lstm_forward_stepwise(*args)
        dout = np.array([p["Delta_0"], p["Delta_1"]]).reshape(2, 1, 1)
        where = "the lecture's two-step example (dout = out - y = [0.03631, -0.47803])"
        res = run_student(_with_package_versions, fn, ("lstm_cell_backward",), dout, copy.deepcopy(caches),
                          forbid=_BACKWARD_FORBID, label=label, what="lstm_backward")
        dx, dh0, dc0, dW, dU, db = _unpack(res, 6, SEQ_GRAD_NAMES, where)
        _lecture_close(dx, [p["delta_x_0"], p["delta_x_1"]], "dx (the lecture's delta x_0, delta x_1)", where)
        _lecture_close(dh0, p["delta_out_prev_0"], "dh0 (the lecture's Delta out_-1)", where)
        _lecture_close(dc0, p["delta_state_0"] * p["gates_0"][2], "dc0 (the lecture's delta state_0 times f_0)", where)
        _lecture_close(db, p["db"], "db", where)
        _lecture_close(dW, p["dW"], "dW", where)
        _lecture_close(dU, p["dU"], "dU", where)
        g = np.random.default_rng(63)
        oracles = [("torch.nn.LSTM's autograd", _random_lstm(g, 4, 3, 2, 3), True)]
    else:
        g = rng(f"{LAB}.lstm_backward")
        oracles = [("central differences", _random_lstm(g, 3, 2, 2, 2, scale=2.0), False),
                   ("central differences", _random_lstm(g, 1, 1, 2, 1, scale=2.0), False),
                   ("torch.nn.LSTM's autograd", _random_lstm(g, int(g.integers(3, 9)), int(g.integers(1, 6)),
                                                             int(g.integers(1, 6)), int(g.integers(1, 6))), True),
                   ("torch.nn.LSTM's autograd", _random_lstm(g, 6, 4, 3, 5, scale=2.0), True)]
    for oracle, args, use_torch in oracles:
        x, h0 = args[0], args[1]
        T, N, D = x.shape
        H = h0.shape[1]
        dout, dh_last, dc_last = g.standard_normal((T, N, H)), g.standard_normal((N, H)), g.standard_normal((N, H))
        expected = (_torch_autograd(args, dout, dh_last, dc_last) if use_torch
                    else _sequence_central_differences(args, dout, dh_last, dc_last))
        _, _, caches = lstm.lstm_forward_stepwise(*args)
        where = (f"lstm_backward on T={T}, N={N}, D={D}, H={H} with dh_last and dc_last, "
                 f"against {oracle}")
        res = run_student(_with_package_versions, fn, ("lstm_cell_backward",), dout.copy(), copy.deepcopy(caches),
                          dh_last.copy(), dc_last.copy(), forbid=_BACKWARD_FORBID, label=label, what=where)
        # autograd agrees to rounding; central differences to ~1e-10 |L| (roundoff over eps = 1e-6)
        tol = {"rtol": 1e-9, "atol": 0.0, "floor": 1e-11} if use_torch else {"rtol": 1e-6, "atol": 0.0, "floor": 1e-7}
        _compare_grads(_unpack(res, 6, SEQ_GRAD_NAMES, where), expected, SEQ_GRAD_NAMES, where, **tol)


# --- 6. torch's layout -----------------------------------------------------------------------------

@exercise
def to_torch_weights(fn: Callable, hidden: bool = False) -> None:
    """``fn(W, U, b)`` -> ``weight_ih, weight_hh, bias_ih, bias_hh`` for torch.nn.LSTM; checked by
    running torch's LSTM with them."""
    __tracebackhide__ = True
    import torch

    if not hidden:
        cases = [_random_lstm(np.random.default_rng(64), 3, 2, 3, 2)]
    else:
        g = rng(f"{LAB}.to_torch_weights")
        cases = [_random_lstm(g, int(g.integers(1, 6)), int(g.integers(1, 5)), int(g.integers(1, 7)),
                              int(g.integers(1, 7))) for _ in range(3)] + [_random_lstm(g, 2, 2, 1, 1)]
    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    for x, h0, c0, W, U, b in cases:
        T, N, D = x.shape
        H = h0.shape[1]
        where = f"to_torch_weights for D={D}, H={H}"
        res = call_student(fn, W.copy(), U.copy(), b.copy(), forbid=[lstm.to_torch, lstm.from_torch, lstm.torch_lstm],
                           label="the conversion to torch's layout", what=where)
        got = _unpack(res, 4, names, where)
        arrays = []
        for name, value, shape in zip(names, got, [(4 * H, D), (4 * H, H), (4 * H,), (4 * H,)]):
            arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value, dtype=float)
            if arr.shape != shape:
                raise GradingError(f"{where}: your {name} has shape {arr.shape}, torch.nn.LSTM({D}, {H}) expects {shape}")
            arrays.append(arr)
        module = torch.nn.LSTM(D, H).double()
        with torch.no_grad():
            for name, arr in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), arrays):
                getattr(module, name).copy_(torch.from_numpy(arr))
            out, (h_n, c_n) = module(torch.from_numpy(x), (torch.from_numpy(h0)[None], torch.from_numpy(c0)[None]))
        r_out, (_, r_c), _ = lstm.lstm_forward_stepwise(x, h0, c0, W, U, b)
        try:
            k = T * (D + H + 1)
            _close(out.numpy(), r_out, "torch.nn.LSTM's output with your weights", k=k)
            _close(c_n[0].numpy(), r_c, "torch.nn.LSTM's final cell state with your weights", k=k)
        except GradingError as exc:
            raise GradingError(f"{where}:\n{exc}\n{_layout_hint(arrays, W, U, b, H)}") from None


def _layout_hint(arrays: list[np.ndarray], W, U, b, H: int) -> str:
    blocks = {g: slice(k * H, (k + 1) * H) for k, g in enumerate(lstm.GATES)}

    def stacked(order: str, m: np.ndarray) -> np.ndarray:
        return np.concatenate([m[blocks[g]] for g in order])

    w_ih = arrays[0]
    for order, text in (("aifo", "you kept the lecture's order (a, i, f, o)"),
                        ("ifoa", "you used the order (i, f, o, g) of the cs231n slide"),
                        ("ifao", "")):
        if w_ih.shape == W.shape and np.allclose(w_ih, stacked(order, W)):
            if order == "ifao":
                if not np.allclose(arrays[2] + arrays[3], stacked(order, b)):
                    return ("hint: the weights are right; torch ADDS bias_ih and bias_hh, so together they must "
                            "equal b (in torch's order)")
                return "hint: weight_ih and the biases look right; check weight_hh (the same rows of U)"
            return f"hint: {text}; torch.nn.LSTM stacks its gates as (i, f, g, o), with g our a"
    return "hint: torch.nn.LSTM stacks the rows of its gates as (i, f, g, o), with g our a, and adds its two biases"


# --- 7. gradient descent ----------------------------------------------------------------------------

@exercise
def sgd_step(fn: Callable, hidden: bool = False) -> None:
    """``fn(params, grads, lr)`` -> a dict of updated parameters, one per key of ``params``."""
    __tracebackhide__ = True
    label = "a step of gradient descent"
    if not hidden:
        p = lstm.lecture_printed()
        e = lstm.lecture_example()
        params = {"W": e["W"], "U": e["U"], "b": e["b"]}
        grads = {"W": p["dW"], "U": p["dU"], "b": p["db"]}
        where = "the lecture's update (its printed dW, dU, db, learning rate 0.1)"
        new = call_student(fn, copy.deepcopy(params), copy.deepcopy(grads), e["lr"], forbid=[lstm.sgd_step],
                           label=label, what="sgd_step")
        new = _as_param_dict(new, params, where)
        hints = " (the slide's rule 'w+ = w + lr * grad(w)' climbs the loss; descend: w - lr * grad)"
        for k in ("W", "U", "b"):
            try:
                _lecture_close(new[k], p[f"new_{k}"], f"new {k}", where)
            except GradingError as exc:
                raise GradingError(f"{exc}{hints}") from None
        g = np.random.default_rng(65)
        cases = [(_random_params(g, 3, 2, 1), float(g.uniform(0.01, 1)))]
    else:
        g = rng(f"{LAB}.sgd_step")
        cases = [(_random_params(g, int(g.integers(1, 6)), int(g.integers(1, 6)), int(g.integers(1, 3))),
                  float(g.uniform(1e-3, 2))) for _ in range(4)]
    for (params, grads), lr in cases:
        where = f"sgd_step with lr = {lr:.4g} on the keys {sorted(params)}"
        expected = lstm.sgd_step(params, grads, lr)
        new = call_student(fn, copy.deepcopy(params), copy.deepcopy(grads), lr, forbid=[lstm.sgd_step],
                           label=label, what=where)
        new = _as_param_dict(new, params, where)
        for k in params:
            try:
                _close(new[k], expected[k], f"new {k}", k=4)
            except GradingError as exc:
                raise GradingError(f"{where}:\n{exc}") from None


def _random_params(g: np.random.Generator, D: int, H: int, K: int) -> tuple[dict, dict]:
    shapes = {"W": (4 * H, D), "U": (4 * H, H), "b": (4 * H,), "Why": (K, H), "by": (K,)}
    params = {k: g.standard_normal(s) for k, s in shapes.items()}
    grads = {k: g.standard_normal(s) for k, s in shapes.items()}
    return params, grads


def _as_param_dict(new: Any, params: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    __tracebackhide__ = True
    if new is None:
        raise GradingError(f"{where}: sgd_step returned None: return the dict of updated parameters")
    if not isinstance(new, Mapping):
        raise GradingError(f"{where}: sgd_step must return a dict like params, got a {type(new).__name__}")
    missing = sorted(set(params) - set(new))
    if missing:
        raise GradingError(f"{where}: the result lacks {missing}: update EVERY entry of params, "
                           "not only W, U and b")
    return new


# --- 8. a training step --------------------------------------------------------------------------

def train_step_reference(params: Mapping[str, Any], x: np.ndarray, y: np.ndarray, lr: float):
    """One step of gradient descent on an LSTM with a linear read-out.

    ``y_hat_t = h_t Why^T + by``; loss ``E = sum over t, n, k of (y_hat - y)^2 / (2 N)``; the
    gradient flows from the read-out into ``h_t`` and back through time. Returns
    ``loss, new_params`` (the loss before the step).
    """
    W, U, b, Why, by = (np.asarray(params[k]) for k in ("W", "U", "b", "Why", "by"))
    T, N, _ = x.shape
    H = U.shape[1]
    out, _, caches = lstm.lstm_forward_stepwise(x, np.zeros((N, H)), np.zeros((N, H)), W, U, b)
    err = out @ Why.T + by - y                                  # (T, N, K)
    loss = 0.5 * float(np.sum(err ** 2)) / N
    dy = err / N
    grads = {"Why": np.einsum("tnk,tnh->kh", dy, out), "by": dy.sum(axis=(0, 1))}
    _, _, _, grads["W"], grads["U"], grads["b"] = lstm.lstm_backward_stepwise(dy @ Why, caches)
    return loss, lstm.sgd_step(params, grads, lr)


def sine_batch(g: np.random.Generator, T: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    """``x, y`` of shape (T, N, 1): sine waves of random frequency and phase; ``y`` is ``x`` one
    step ahead (predict the next sample)."""
    omega = g.uniform(0.15, 0.45, size=(1, N, 1))
    phase = g.uniform(0, 2 * np.pi, size=(1, N, 1))
    s = np.sin(omega * np.arange(T + 1)[:, None, None] + phase)          # (T + 1, N, 1)
    return s[:-1], s[1:]


def init_params(g: np.random.Generator, D: int, H: int, K: int) -> dict[str, np.ndarray]:
    """Uniform(-1/sqrt(H), 1/sqrt(H)) like torch.nn.LSTM, forget-gate bias 1."""
    s = 1 / np.sqrt(H)
    params = {"W": g.uniform(-s, s, (4 * H, D)), "U": g.uniform(-s, s, (4 * H, H)), "b": g.uniform(-s, s, 4 * H),
              "Why": g.uniform(-s, s, (K, H)), "by": np.zeros(K)}
    params["b"][2 * H:3 * H] = 1.0
    return params


_TRAIN_K = 10_000      # sums over steps, batch and hidden units, in whatever order the student's code takes


@exercise
def train_step(fn: Callable, hidden: bool = False) -> None:
    """``fn(params, x, y, lr)`` -> ``loss, new_params`` (checked with the package's
    ``lstm_forward``, ``lstm_backward`` and ``sgd_step`` in place of the student's)."""
    __tracebackhide__ = True
    if not hidden:
        g = np.random.default_rng(66)
        cases = [(init_params(g, 1, 5, 1), *sine_batch(g, 6, 3), 0.1)]
    else:
        g = rng(f"{LAB}.train_step")
        cases = []
        for _ in range(3):
            D, H, K = int(g.integers(1, 4)), int(g.integers(1, 7)), int(g.integers(1, 3))
            T, N = int(g.integers(1, 8)), int(g.integers(1, 6))
            params = init_params(g, D, H, K)
            params["by"] = g.standard_normal(K)
            cases.append((params, g.standard_normal((T, N, D)), g.standard_normal((T, N, K)), float(g.uniform(0.01, 1))))
    for params, x, y, lr in cases:
        T, N, D = x.shape
        where = f"train_step on T={T}, N={N}, D={D}, H={params['U'].shape[1]}, K={y.shape[2]}, lr={lr:.3g}"
        r_loss, r_new = train_step_reference(params, x, y, lr)
        res = run_student(_with_package_versions, fn, ("lstm_forward", "lstm_backward", "sgd_step"),
                          copy.deepcopy(params), x.copy(), y.copy(), lr, forbid=[*AUTOGRAD, *TORCH_LSTM],
                          label="a training step", what=where)
        loss, new = _unpack(res, 2, ("loss", "new_params"), where)
        try:
            _close(loss, r_loss, "loss (before the step)", k=_TRAIN_K,
                         hints={2.0: "a factor of 2: the loss has the lecture's 1/2",
                                float(N): f"a factor of N = {N}: divide the sum by the batch size"})
        except GradingError as exc:
            raise GradingError(f"{where}:\n{exc}") from None
        new = _as_param_dict(new, params, where)
        for k in ("Why", "by", "W", "U", "b"):
            try:
                _close(new[k], r_new[k], f"new {k}", k=_TRAIN_K)
            except GradingError as exc:
                hint = {"Why": "dWhy = sum over t, n of dy_hat^T h_t", "by": "dby = dy_hat summed over t and n"}.get(
                    k, "the gradient reaching h_t is dy_hat Why (the read-out's weights), scaled like the loss (1/N)")
                raise GradingError(f"{where}:\n{exc}\nhint: {hint}") from None


# --- questions ----------------------------------------------------------------------------

# The accepted letters, hashed so the answers are not spelled out in the package.
_ANSWERS = {"cell_gradient": "6f0ccbb04322fd37ddccad7ad2b3eb79",
            "batched_gemms": "0b13a603ba72b82a5db9f84e7972276c"}


@exercise
def cell_gradient_question(answer: Any) -> None:
    """Why does the cell state carry gradients over many steps?"""
    __tracebackhide__ = True
    check_choice("lab06", answer, "ABCD", _ANSWERS["cell_gradient"], "write dc_{t-1} in terms of dc_t, as in your "
                 "lstm_cell_backward; what multiplies it at each step?", question="cell_gradient")


@exercise
def batched_gemms_question(answer: Any) -> None:
    """Which backward products can be one GEMM over the whole sequence?"""
    __tracebackhide__ = True
    check_choice("lab06", answer, "ABCD", _ANSWERS["batched_gemms"], "a product can wait until after the time "
                 "loop when nothing inside the loop needs its result; pick every such product.",
                 question="batched_gemms")
