"""Checks for lab06_lstm_bptt: the visible cases.

Each check takes the student's function and runs the public cases shown in the released
notebook; ``check.NAME(fn, hidden=True)`` runs the instructor's hidden cases
(``gpudl_instructor.checks.lab06``), which reuse the comparisons here (``_compare_*``) with the
live references. The expected answers of the visible cases come from:

- the lecture's worked example, to the digits the slides print (``gpudl.lstm.lecture_printed``),
  within ``LECTURE_TOL`` because the slides round every intermediate;
- ``torch.nn.LSTM`` holding the same weights (``gpudl.lstm.torch_lstm``, ``torch_lstm_call``):
  its autograd for the gradients of one step and of the sequence, its forward for the
  conversion to torch's layout;
- the values the references returned on these cases when the lab was released
  (``expected("lab06")``, ``gpudl.grading.expected``): the caches, the FLOP counts, the update
  of a random case, the training step.

An exercise that calls an earlier one (the sequence forward calls ``lstm_cell_forward``) is
checked with the expected results of the earlier function put in its place for the duration
of the check, so a mistake in one exercise costs that exercise's points only. The stand-in
(``_StandIn``, a ``Replay`` of the calls a correct solution makes on the case) answers exactly
those calls, and any other call with a message that names the argument that differs. The swap
happens in the student's namespace, so it is done by a ``@student_side`` adapter
(``_with_replays``) around the call; everything else crosses as plain data (arrays, and the
caches as dicts of arrays).
"""
from __future__ import annotations

import contextlib
import copy
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from .. import lstm
from . import (Case, GradingError, assert_close, call_student, check_cases, choice_letters, exercise,
               numerical_gradient, question, run_student, student_side, tolerance, with_likely_mistake)
from .expected import Replay, expected, same

LAB = "lab06"
LECTURE_TOL = 1e-4
ABS_FLOOR = 1e-12     # inputs are O(1): rounding differences stay far below this
CACHE_KEYS = ("x", "h_prev", "c_prev", "a", "i", "f", "o", "c", "W", "U")
GRAD_NAMES = ("dx", "dh_prev", "dc_prev", "dW", "dU", "db")
SEQ_GRAD_NAMES = ("dx", "dh0", "dc0", "dW", "dU", "db")
AUTOGRAD = ("torch.autograd.grad", "torch.autograd.backward", "torch.autograd.graph._engine_run_backward",
            # forward mode gives the same gradients, one direction at a time
            "torch.autograd.forward_ad.make_dual", "torch.autograd.forward_ad.unpack_dual", "torch.func.jvp",
            "torch.func.jacfwd", "torch.func.linearize", "torch.func.hessian")
TORCH_LSTM = ("torch.nn.LSTM", "torch.nn.LSTMCell", "torch.lstm", "torch.lstm_cell")
TORCH_TOOLS = ("gpudl.lstm.torch_lstm", "gpudl.lstm.torch_lstm_call")     # torch.nn.LSTM holding our weights
TORCH_TOL = {"rtol": 1e-9, "atol": 0.0, "floor": 1e-11}        # against autograd: rounding only
NUMERIC_TOL = {"rtol": 1e-6, "atol": 0.0, "floor": 1e-7}       # central differences: ~1e-10 |L| / eps

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

def _lecture_close(actual: Any, printed: Any, name: str, where: str,
                   mistakes: Mapping[str, Any] | None = None) -> None:
    """Within LECTURE_TOL of the slides' printed numbers, with a message that shows both; when the
    numbers are those a known mistake gives (``mistakes``: its text -> what it gives, computed from
    the printed numbers), the message names it."""
    __tracebackhide__ = True
    try:
        _within_lecture_tol(actual, printed, name, where)
    except GradingError as exc:
        raise GradingError(with_likely_mistake(str(exc), actual, mistakes, _within_lecture_tol, name=name,
                                               where=where)) from None


def _within_lecture_tol(actual: Any, printed: Any, name: str, where: str) -> None:
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


def _sigmoid(z: Any) -> Any:
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(z, dtype=float)))


_BLOCKS = {"a": "the first block of z", "i": "the second", "f": "the third", "o": "the fourth"}
_SIGMOID_ON_A = "did you put the sigmoid on a? a = tanh(z_a), in -1..1; only i, f and o are sigmoids"
_GATE_SWAPS = (("i", "f"), ("i", "o"), ("f", "o"))


def _swap_text(one: str, other: str) -> str:
    return (f"did you swap the gates {one} and {other}? z's blocks are (a, i, f, o): {one} is the sigmoid of "
            f"{_BLOCKS[one]}, {other} of {_BLOCKS[other]}")


def _a_with_sigmoid(a: Any) -> Any:
    """What a becomes when the sigmoid is put on z_a = arctanh(a) instead of tanh."""
    return _sigmoid(np.arctanh(np.asarray(a, dtype=float)))


def _gate_mistakes(gates: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """For each gate of ``gates`` (the expected a, i, f, o after their nonlinearities): the known
    mistakes and the value they give that gate (two sigmoid gates read from each other's block of z,
    the sigmoid put on a)."""
    table: dict[str, dict[str, Any]] = {key: {} for key in "aifo"}
    for one, other in _GATE_SWAPS:
        table[one][_swap_text(one, other)] = gates[other]
        table[other][_swap_text(one, other)] = gates[one]
    table["a"][_SIGMOID_ON_A] = lambda: _a_with_sigmoid(gates["a"])
    return table


def _gate_vector_mistakes(printed: Sequence[float]) -> dict[str, Any]:
    """The known mistakes of the gate vector (a, i, f, o) the lecture prints, and the vectors they give."""
    gates = dict(zip("aifo", (float(v) for v in printed)))
    table: dict[str, Any] = {}
    for one, other in _GATE_SWAPS:
        swapped = dict(gates, **{one: gates[other], other: gates[one]})
        table[_swap_text(one, other)] = [swapped[key] for key in "aifo"]
    table[_SIGMOID_ON_A] = lambda: [float(_a_with_sigmoid(gates["a"])), gates["i"], gates["f"], gates["o"]]
    return table


_RETURNS_C_H = "did you return (c, h, cache)? lstm_cell_forward returns h first: h, c, cache"
_TANH_OF_PRODUCT = "did you compute tanh(o * c)? The output is o * tanh(c): the tanh of the state, times o"
_NO_TANH = "did you leave out the tanh? The output is o * tanh(c), not o * c"


def _state_mistakes(h: Any) -> dict[str, Any]:
    """The known mistakes of the returned c, given the expected h."""
    return {_RETURNS_C_H: h}


def _output_mistakes(c: Any, o: Any) -> dict[str, Any]:
    """The known mistakes of the returned h, given the expected c and o."""
    return {_RETURNS_C_H: c, _TANH_OF_PRODUCT: lambda: np.tanh(np.asarray(o) * np.asarray(c)),
            _NO_TANH: lambda: np.asarray(o) * np.asarray(c)}


def _check_cache(cache: Any, ref: Mapping[str, Any], where: str, k: int = 1) -> None:
    __tracebackhide__ = True
    mistakes = _gate_mistakes(ref)
    if not isinstance(cache, Mapping):
        raise GradingError(f"{where}: the cache must be a dict with the keys {', '.join(CACHE_KEYS)}, "
                           f"got a {type(cache).__name__}")
    missing = [k for k in CACHE_KEYS if k not in cache]
    if missing:
        raise GradingError(f"{where}: the cache lacks the key(s) {missing}; lstm_cell_backward needs "
                           f"{', '.join(CACHE_KEYS)}")
    for key in CACHE_KEYS:
        try:
            _close(cache[key], ref[key], f"cache[{key!r}]", k=k, mistakes=mistakes.get(key))
        except GradingError as exc:
            gate = {"a": "a = tanh(z_a), the first block of z", "i": "i = sigmoid(z_i), the second block",
                    "f": "f = sigmoid(z_f), the third block", "o": "o = sigmoid(z_o), the fourth block"}.get(key, "")
            raise GradingError(f"{where}:\n{exc}" + (f"\n({gate})" if gate else "")) from None


def _close(actual: Any, expected: Any, name: str, *, k: int = 1, rtol: float | None = None,
           atol: float | None = None, floor: float = ABS_FLOOR, hints: Mapping[float, str] | None = None,
           mistakes: Mapping[str, Any] | None = None) -> None:
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
    assert_close(actual, e, name=name, rtol=rtol, atol=max(atol, floor / scale), hints=hints, mistakes=mistakes)


def _compare_grads(actual: Sequence[Any], expected: Sequence[Any], names: Sequence[str], where: str,
                   mistakes: Mapping[str, Mapping[str, Any]] | None = None, **tol: Any) -> None:
    """Each of ``actual`` against ``expected``; ``mistakes[name]`` the known mistakes of one of them
    (their text -> the value they give)."""
    __tracebackhide__ = True
    for name, a, e in zip(names, actual, expected):
        try:
            _close(a, e, name, mistakes=(mistakes or {}).get(name), **tol)
        except GradingError as exc:
            hint = _GRAD_HINTS.get(name, "")
            raise GradingError(f"{where}:\n{exc}" + (f"\nhint: {hint}" if hint else "")) from None


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


# --- torch.nn.LSTM's autograd: the oracle of the gradients ------------------------------------------

def _torch_autograd(args: Sequence[np.ndarray], dout: np.ndarray, dh_last: np.ndarray,
                    dc_last: np.ndarray) -> tuple[np.ndarray, ...]:
    """``dx, dh0, dc0, dW, dU, db`` (our order) of ``L = <dout, out> + <dh_last, h_T> +
    <dc_last, c_T>`` through torch.nn.LSTM with the weights ``args[3:]`` (float64, CPU)."""
    import torch

    tensors = [torch.tensor(np.asarray(v, dtype=float), requires_grad=True) for v in args]
    out, (h_T, c_T) = lstm.torch_lstm_call(*tensors)
    loss = ((out * torch.tensor(dout)).sum() + (h_T * torch.tensor(dh_last)).sum()
            + (c_T * torch.tensor(dc_last)).sum())
    loss.backward()
    return tuple(t.grad.numpy() for t in tensors)


def _torch_step(x_t, h_prev, c_prev, W, U, b, dh, dc) -> tuple[np.ndarray, ...]:
    """One step's ``dx, dh_prev, dc_prev, dW, dU, db`` (``L = <dh, h> + <dc, c>``) by autograd."""
    dx, dh_prev, dc_prev, dW, dU, db = _torch_autograd((x_t[None], h_prev, c_prev, W, U, b), dh[None],
                                                       np.zeros_like(dh), dc)
    return dx[0], dh_prev, dc_prev, dW, dU, db


# --- the expected earlier exercises, in the student's namespace --------------------------------------

# The parameters of the functions a later exercise may call, as the lab writes them.
_SIGNATURES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "lstm_cell_forward": (("x_t", "h_prev", "c_prev", "W", "U", "b"), {}),
    "lstm_cell_backward": (("dh", "dc", "cache"), {}),
    "lstm_forward": (("x", "h0", "c0", "W", "U", "b"), {}),
    "lstm_backward": (("dout", "caches", "dh_last", "dc_last"), {"dh_last": None, "dc_last": None}),
    "sgd_step": (("params", "grads", "lr"), {}),
}


class _StandIn:
    """The expected ``name`` for one check's case: a ``Replay`` of the calls a correct solution
    makes (``entries``), reached with every argument bound to its parameter (defaults filled
    in, a scalar or array-like where an array is recorded made that array). A call that is not
    among them raises ``GradingError`` naming the arguments that differ from the closest
    recorded call, with ``hints[param]`` (or ``hints["param[key]"]`` for a dict's entry)."""

    def __init__(self, name: str, entries: Sequence[Sequence[Any]], labels: Sequence[str], hints: Mapping[str, str],
                 caller: str):
        self.__name__ = name
        self._params, self._defaults = _SIGNATURES[name]
        self._entries = [tuple(a) for a, _, _ in entries]
        self._replay = Replay(name, entries)
        self._labels = list(labels) or [""] * len(self._entries)
        self._hints = dict(hints)
        self._caller = caller

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        bound = self._bind(args, kwargs)
        try:
            return self._replay(*bound)
        except GradingError:
            raise GradingError(self._explain(bound)) from None

    def __repr__(self) -> str:
        return f"<the expected {self.__name__} for this check's case>"

    def _bind(self, args: tuple, kwargs: Mapping[str, Any]) -> tuple:
        params, defaults = self._params, self._defaults
        if len(args) > len(params):
            raise TypeError(f"{self.__name__}() takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
        values = dict(zip(params, args))
        for key, value in kwargs.items():
            if key not in params:
                raise TypeError(f"{self.__name__}() got an unexpected keyword argument {key!r}")
            if key in values:
                raise TypeError(f"{self.__name__}() got multiple values for {key!r}")
            values[key] = value
        missing = [p for p in params if p not in values and p not in defaults]
        if missing:
            raise TypeError(f"{self.__name__}() is missing {', '.join(missing)}")
        return tuple(self._like_recorded(pos, values.get(p, defaults.get(p))) for pos, p in enumerate(params))

    def _like_recorded(self, pos: int, value: Any) -> Any:
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        recorded = [a[pos] for a in self._entries]
        if value is None or isinstance(value, (Mapping, list, tuple)) or not recorded \
                or not all(isinstance(r, np.ndarray) for r in recorded):
            return value
        like = recorded[0]
        try:
            arr = np.asarray(value)
            if arr.dtype.kind in "biuf" and np.broadcast_shapes(arr.shape, like.shape) == like.shape:
                return np.array(np.broadcast_to(arr.astype(like.dtype, copy=False), like.shape))
        except (TypeError, ValueError):
            pass
        return value

    def _explain(self, bound: tuple) -> str:
        best, differ, cost = 0, list(range(len(self._params))), float("inf")
        for n, rec in enumerate(self._entries):       # the closest call: fewest differing values, a dict's
            d = [pos for pos, (a, r) in enumerate(zip(bound, rec)) if not _same(a, r)]     # entries counted one by one
            c = sum(_mismatches(bound[pos], rec[pos]) for pos in d)
            if c < cost:
                best, differ, cost = n, d, c
        label = self._labels[best] if best < len(self._labels) else ""
        lines = [f"your {self._caller} calls {self.__name__} with arguments that a correct {self._caller} does not "
                 f"pass on this case" + (f" (the closest is its call {label})" if label else "") + ":"]
        for pos in differ:
            name, mine, theirs = self._params[pos], bound[pos], self._entries[best][pos]
            if isinstance(mine, Mapping) and isinstance(theirs, Mapping):
                keys = [k for k in theirs if k not in mine or not _same(mine[k], theirs[k])]
                extra = [k for k in mine if k not in theirs]
                if len(keys) > 3 and not any(f"{name}[{k}]" in self._hints for k in keys):
                    hint = self._hints.get(name, "")
                    lines.append(f"- {name} differs in {len(keys)} of its {len(theirs)} entries "
                                 f"({', '.join(map(str, keys))})" + (f": {hint}" if hint else ""))
                    keys = []
                for key in keys:
                    what = "is missing" if key not in mine else "differs"
                    hint = self._hints.get(f"{name}[{key}]", self._hints.get(name, ""))
                    lines.append(f"- {name}[{key!r}] {what}" + (f": {hint}" if hint else ""))
                if extra:
                    lines.append(f"- {name} has entries a correct call does not: {extra}")
                continue
            shape = ""
            if hasattr(mine, "shape") and hasattr(theirs, "shape") and tuple(mine.shape) != tuple(theirs.shape):
                shape = f" (shape {tuple(mine.shape)}, expected {tuple(theirs.shape)})"
            elif (mine is None) != (theirs is None):
                shape = " (None, expected an array)" if mine is None else " (expected None)"
            hint = self._hints.get(name, "")
            lines.append(f"- {name} differs{shape}" + (f": {hint}" if hint else ""))
        return "\n".join(lines)


def _mismatches(a: Any, b: Any) -> int:
    """How many values of ``a`` differ from ``b``: a dict's or a list's entries one by one."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return max(1, sum(k not in a or not _same(a[k], b[k]) for k in b) + sum(k not in b for k in a))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return max(1, sum(_mismatches(x, y) for x, y in zip(a, b) if not _same(x, y)))
    return 1


def _same(a: Any, b: Any) -> bool:
    try:
        return same(a, b)
    except Exception:  # noqa: BLE001 - whatever the student passed, it is not the recorded value
        return False


@contextlib.contextmanager
def _in_namespace(fn: Callable, **substitutes: Any) -> Iterator[None]:
    """Put ``substitutes`` in the student's namespace while ``fn`` runs (and restore the
    student's own afterwards); only names the namespace has are replaced."""
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


@student_side
def _with_replays(fn: Callable, replays: Mapping[str, Mapping[str, Any]], *args: Any) -> Any:
    """(Student side) ``fn(*args)`` with a ``_StandIn`` for each earlier exercise of ``replays``
    ({name: {"entries": [(args, kwargs, result), ...], "labels": [...], "hints": {...}}}) in
    the student's namespace for the duration of the call."""
    caller = getattr(fn, "__name__", "function")
    stand_ins = {name: _StandIn(name, spec["entries"], spec.get("labels", ()), spec.get("hints", {}), caller)
                 for name, spec in replays.items()}
    with _in_namespace(fn, **stand_ins):
        return fn(*args)


_GIVEN_PARAMS = ("pass params['W'], params['U'], params['b'], the parameters train_step was given: the loss is the "
                 "one BEFORE the step, so one forward pass is all it takes")

_STEP_HINTS = {
    "lstm_cell_forward": {
        "x_t": "pass x[t], the input of step t",
        "h_prev": "pass the h that the previous step returned (h0 at t = 0): the output is carried through time",
        "c_prev": "pass the c that the previous step returned (c0 at t = 0): the cell state is carried through time",
        "W": "pass W, U and b unchanged to every step", "U": "pass W, U and b unchanged to every step",
        "b": "pass W, U and b unchanged to every step"},
    "lstm_cell_backward": {
        "dh": "dh at step t is dout[t] plus the dh_prev that step t+1 returned (dh_last at the last step, zero "
              "when None); walk t = T-1, ..., 0",
        "dc": "dc at step t is the dc_prev that step t+1 returned (dc_last at the last step, zero when None)",
        "cache": "pass caches[t], walking t = T-1, ..., 0"},
    "lstm_forward": {
        "x": "pass x as given", "h0": "start from h0 = zeros (N, H)", "c0": "start from c0 = zeros (N, H)",
        "W": _GIVEN_PARAMS, "U": _GIVEN_PARAMS, "b": _GIVEN_PARAMS},
    "lstm_backward": {
        "dout": "the gradient reaching each h_t is dout[t] = dy_hat[t] @ Why, with dy_hat = (y_hat - y) / N (the "
                "square's 2 cancels the loss's 1/2; the 1/N stays)",
        "caches": "pass the caches lstm_forward returned",
        "dh_last": "nothing reaches the final states except through dout: leave dh_last None",
        "dc_last": "nothing reaches the final states except through dout: leave dc_last None"},
    "sgd_step": {
        "params": "pass the params train_step was given",
        "grads[Why]": "dWhy = sum over t, n of dy_hat^T h_t, with dy_hat = (y_hat - y) / N",
        "grads[by]": "dby = dy_hat summed over t and n",
        "grads": "grads['W'], grads['U'], grads['b'] are what lstm_backward returns for the dout you pass it",
        "lr": "pass the learning rate train_step was given"},
}


def _replays(calls: Mapping[str, Sequence[Any]]) -> dict[str, dict[str, Any]]:
    """The recorded calls of a reference (``{name: [(args, kwargs, result), ...]}``) as the
    argument of ``_with_replays``, with the labels and hints of the lab's functions."""
    out = {}
    for name, entries in calls.items():
        entries = [tuple(e) for e in entries]
        if name == "lstm_cell_forward":
            labels = [f"at step t = {t}" for t in range(len(entries))]
        elif name == "lstm_cell_backward":
            labels = [f"at step t = {len(entries) - 1 - n}" for n in range(len(entries))]
        else:
            labels = []
        out[name] = {"entries": entries, "labels": labels, "hints": _STEP_HINTS.get(name, {})}
    return out


# --- 1. one step forward ---------------------------------------------------------------------

_FORWARD_FORBID = [*TORCH_LSTM, *TORCH_TOOLS]


@exercise
def lstm_cell_forward(fn: Callable) -> None:
    """``fn(x_t, h_prev, c_prev, W, U, b)`` -> ``h, c, cache``."""
    __tracebackhide__ = True
    p = lstm.lecture_printed()
    _, (x, h0, c0, W, U, b) = _lecture_args()
    steps = [(0, x[0], h0, c0, p["out_0"], p["state_0"]),
             (1, x[1], np.full((1, 1), p["out_0"]), np.full((1, 1), p["state_0"]), p["out_1"], p["state_1"])]
    for t, x_t, h_prev, c_prev, out, state in steps:
        where = f"the lecture's example at t = {t}"
        h, c, cache = _unpack(call_student(fn, x_t.copy(), h_prev.copy(), c_prev.copy(), W.copy(), U.copy(), b.copy(),
                                           forbid=_FORWARD_FORBID, label="one LSTM step", what="lstm_cell_forward"),
                              3, ("h", "c", "cache"), where)
        gates = p[f"gates_{t}"]
        if isinstance(cache, Mapping) and all(k in cache for k in "aifo"):
            _lecture_close([np.asarray(cache[k]).ravel()[0] for k in "aifo"], gates,
                           "gates (a, i, f, o) in the cache", where, mistakes=_gate_vector_mistakes(gates))
        _lecture_close(c, state, f"c (the lecture's state_{t})", where, mistakes=_state_mistakes(out))
        _lecture_close(h, out, f"h (the lecture's out_{t})", where, mistakes=_output_mistakes(state, gates[3]))
    _compare_cell_forward(fn, [_random_lstm(np.random.default_rng(6), 1, 3, 4, 2)], expected(LAB))


def _compare_cell_forward(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    """Each case ``(x, h0, c0, W, U, b)`` with ``T = 1``: ``h``, ``c`` and every entry of the
    cache against ``ref.lstm_cell_forward``."""
    __tracebackhide__ = True
    for x, h0, c0, W, U, b in cases:
        where = f"lstm_cell_forward on a batch of N={h0.shape[0]}, D={x.shape[2]}, H={h0.shape[1]}"
        rh, rc, rcache = ref.lstm_cell_forward(x[0], h0, c0, W, U, b)
        h, c, cache = _unpack(call_student(fn, x[0].copy(), h0.copy(), c0.copy(), W.copy(), U.copy(), b.copy(),
                                           forbid=_FORWARD_FORBID, label="one LSTM step", what=where),
                              3, ("h", "c", "cache"), where)
        k = x.shape[2] + h0.shape[1] + 1          # the length of the sums behind each gate
        _check_cache(cache, rcache, where, k=k)
        _compare_grads((c, h), (rc, rh), ("c", "h"), where, k=k,
                       mistakes={"c": _state_mistakes(rh), "h": _output_mistakes(rc, rcache["o"])})


# --- 2. the sequence forward -----------------------------------------------------------------

_FINAL_SWAPPED = "did you return (c_T, h_T)? The final states come as (h_T, c_T), like torch.nn.LSTM's (h_n, c_n)"

@exercise
def lstm_forward(fn: Callable) -> None:
    """``fn(x, h0, c0, W, U, b)`` -> ``out, (h_T, c_T), caches`` (checked with the expected
    ``lstm_cell_forward`` in place of the student's)."""
    __tracebackhide__ = True
    ref = expected(LAB)
    p = lstm.lecture_printed()
    _, args = _lecture_args()
    where = "the lecture's two-step example"
    _, calls = ref.lstm_forward_calls(*args)
    res = run_student(_with_replays, fn, _replays(calls), *(a.copy() for a in args),
                      forbid=_FORWARD_FORBID, label="the sequence forward", what="lstm_forward")
    out, final, _ = _unpack(res, 3, ("out", "(h_T, c_T)", "caches"), where)
    _lecture_close(out, [p["out_0"], p["out_1"]], "out (the lecture's out_0, out_1)", where)
    h_T, c_T = _unpack(final, 2, ("h_T", "c_T"), f"{where}: the final states")
    _lecture_close(c_T, p["state_1"], "c_T (the lecture's state_1)", where, mistakes={_FINAL_SWAPPED: p["out_1"]})
    _lecture_close(h_T, p["out_1"], "h_T (the lecture's out_1)", where, mistakes={_FINAL_SWAPPED: p["state_1"]})
    _compare_forward(fn, [_random_lstm(np.random.default_rng(61), 4, 3, 2, 3)], ref)


def _compare_forward(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    """Each case ``(x, h0, c0, W, U, b)``: ``out``, the final states and every cache against
    ``ref.lstm_forward_calls``, whose calls of the cell stand in for the student's."""
    __tracebackhide__ = True
    for args in cases:
        x, h0 = args[0], args[1]
        T, N, D = x.shape
        H = h0.shape[1]
        where = f"lstm_forward on T={T}, N={N}, D={D}, H={H} (h0, c0 not zero)"
        (r_out, (r_h, r_c), r_caches), calls = ref.lstm_forward_calls(*args)
        res = run_student(_with_replays, fn, _replays(calls), *(a.copy() for a in args),
                          forbid=_FORWARD_FORBID, label="the sequence forward", what=where)
        out, final, caches = _unpack(res, 3, ("out", "(h_T, c_T)", "caches"), where)
        h_T, c_T = _unpack(final, 2, ("h_T", "c_T"), f"{where}: the final states")
        k = T * (D + H + 1)                         # rounding differences grow along the sequence
        _compare_grads((out, h_T, c_T), (r_out, r_h, r_c), ("out", "h_T", "c_T"), where, k=k,
                       mistakes={"h_T": {_FINAL_SWAPPED: r_c}, "c_T": {_FINAL_SWAPPED: r_h}})
        if not isinstance(caches, (list, tuple)) or len(caches) != T:
            raise GradingError(f"{where}: caches must be a list of the T = {T} caches of lstm_cell_forward, "
                               f"got {type(caches).__name__}" + (f" of length {len(caches)}" if hasattr(caches, "__len__") else ""))
        for t in range(T):
            _check_cache(caches[t], r_caches[t], f"{where}, caches[{t}]", k=k)


# --- 3. FLOPs ----------------------------------------------------------------------------------

@exercise
def lstm_flops(fn: Callable) -> None:
    """``fn(T, N, D, H)`` -> FLOPs of the forward pass's matrix products."""
    __tracebackhide__ = True
    cases = [Case((2, 1, 2, 1), label="the lecture's example (T=2, N=1, D=2, H=1)"),
             Case((64, 32, 256, 256), label="T=64, N=32, D=H=256")]
    _compare_flops(fn, cases, expected(LAB))


def _compare_flops(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, lambda T, N, D, H: ref.lstm_flops(T, N, D, H), cases, label="the LSTM's FLOPs",
                rtol=0.0, atol=0.0, dtype="int8",
                hints={0.25: "a factor of 1/4: four gates, each with its own rows of W and U",
                       0.5: "a factor of 1/2: a multiply-add is 2 FLOPs"})


# --- 4. one step backward --------------------------------------------------------------------

_DC_PREV_WITHOUT_F = ("did you return delta state itself as dc_prev? The cell state goes back through the forget "
                      "gate: dc_prev = delta_state * f")

_BACKWARD_FORBID = [*AUTOGRAD, *TORCH_TOOLS]


@exercise
def lstm_cell_backward(fn: Callable) -> None:
    """``fn(dh, dc, cache)`` -> ``dx, dh_prev, dc_prev, dW, dU, db`` (caches of the expected
    ``lstm_cell_forward``)."""
    __tracebackhide__ = True
    ref = expected(LAB)
    p = lstm.lecture_printed()
    _, (x, h0, c0, W, U, b) = _lecture_args()
    f0, f1 = p["gates_0"][2], p["gates_1"][2]
    _, _, cache1 = ref.lstm_cell_forward(x[1], np.full((1, 1), p["out_0"]), np.full((1, 1), p["state_0"]), W, U, b)
    _, _, cache0 = ref.lstm_cell_forward(x[0], h0, c0, W, U, b)
    steps = [
        (1, p["Delta_1"], 0.0, cache1,
         {"dx": p["delta_x_1"], "dh_prev": p["delta_out_prev_1"], "dc_prev": p["delta_state_1"] * f1,
          "dW": np.outer(p["delta_gates_1"], x[1, 0]), "dU": p["dU"].ravel(), "db": p["delta_gates_1"]}),
        (0, p["delta_out_0"], p["delta_state_1"] * f1, cache0,
         {"dx": p["delta_x_0"], "dh_prev": p["delta_out_prev_0"], "dc_prev": p["delta_state_0"] * f0,
          "dW": np.outer(p["delta_gates_0"], x[0, 0]), "dU": np.zeros(4), "db": p["delta_gates_0"]}),
    ]
    for t, dh, dc, cache, want in steps:
        where = f"the lecture's backward path at t = {t} (dh = {float(dh):.5f}, dc = {float(dc):.5f})"
        res = call_student(fn, np.full((1, 1), dh), np.full((1, 1), dc), copy.deepcopy(cache),
                           forbid=_BACKWARD_FORBID, label="one LSTM step backward", what="lstm_cell_backward")
        got = dict(zip(GRAD_NAMES, _unpack(res, 6, GRAD_NAMES, where)))
        _lecture_close(got["db"], want["db"], "db (the lecture's delta gates: a, i, f, o)", where)
        mistakes = {"dc_prev": {_DC_PREV_WITHOUT_F: p[f"delta_state_{t}"]}}
        for name in ("dc_prev", "dx", "dh_prev", "dW", "dU"):
            _lecture_close(got[name], want[name], name, where, mistakes=mistakes.get(name))
    g = np.random.default_rng(62)
    args = _random_lstm(g, 1, 3, 4, 2)
    _compare_cell_backward(fn, [(args, g.standard_normal((3, 2)), g.standard_normal((3, 2)), "torch")], ref)


def _cell_central_differences(ref: Any, args: Sequence[np.ndarray], dh: np.ndarray, dc: np.ndarray,
                              eps: float = 1e-6) -> list[np.ndarray]:
    """Gradients of ``L = sum(dh * h) + sum(dc * c)`` by central differences of
    ``ref.lstm_cell_forward`` (float64)."""
    arrays = [np.array(v, dtype=float) for v in args]

    def loss() -> float:
        h, c, _ = ref.lstm_cell_forward(*arrays)
        return float(np.sum(dh * h) + np.sum(dc * c))

    return numerical_gradient(loss, arrays, eps)


def _compare_cell_backward(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    """Each case ``((x, h0, c0, W, U, b), dh, dc, oracle)`` with ``T = 1``: the six gradients
    of the step, with the cache of ``ref.lstm_cell_forward``, against the oracle: ``"torch"``
    (torch.nn.LSTM's autograd), ``"reference"`` (``ref.lstm_cell_backward``) or ``"central
    differences"`` (of ``ref.lstm_cell_forward``)."""
    __tracebackhide__ = True
    for (x, h0, c0, W, U, b), dh, dc, oracle in cases:
        N, H = h0.shape
        _, _, cache = ref.lstm_cell_forward(x[0], h0, c0, W, U, b)
        if oracle == "torch":
            want = _torch_step(x[0], h0, c0, W, U, b, dh, dc)
            where = f"lstm_cell_backward on N={N}, D={x.shape[2]}, H={H}, against torch.nn.LSTM's autograd"
            tol = TORCH_TOL
        elif oracle == "central differences":
            want = _cell_central_differences(ref, (x[0], h0, c0, W, U, b), dh, dc)
            where, tol = "lstm_cell_backward against central differences of the forward pass", NUMERIC_TOL
        else:
            want = ref.lstm_cell_backward(dh, dc, cache)
            where, tol = f"lstm_cell_backward on N={N}, D={x.shape[2]}, H={H}", {"k": N * (4 * H + x.shape[2] + H)}
        res = call_student(fn, dh.copy(), dc.copy(), copy.deepcopy(cache), forbid=_BACKWARD_FORBID,
                           label="one LSTM step backward", what=where)
        without_f = {_DC_PREV_WITHOUT_F: lambda want=want, f=cache["f"]: np.asarray(want[2]) / np.asarray(f)}
        _compare_grads(_unpack(res, 6, GRAD_NAMES, where), want, GRAD_NAMES, where,
                       mistakes={"dc_prev": without_f}, **tol)


# --- 5. backpropagation through time ---------------------------------------------------------

@exercise
def lstm_backward(fn: Callable) -> None:
    """``fn(dout, caches, dh_last=None, dc_last=None)`` -> ``dx, dh0, dc0, dW, dU, db`` (checked
    with the expected ``lstm_cell_backward`` in place of the student's)."""
    __tracebackhide__ = True
    ref = expected(LAB)
    p = lstm.lecture_printed()
    _, args = _lecture_args()
    _, _, caches = ref.lstm_forward_stepwise(*args)
    dout = np.array([p["Delta_0"], p["Delta_1"]]).reshape(2, 1, 1)
    _, calls = ref.lstm_backward_calls(dout, caches, None, None)
    where = "the lecture's two-step example (dout = out - y = [0.03631, -0.47803])"
    res = run_student(_with_replays, fn, _replays(calls), dout, copy.deepcopy(caches),
                      forbid=_BACKWARD_FORBID, label="backpropagation through time", what="lstm_backward")
    dx, dh0, dc0, dW, dU, db = _unpack(res, 6, SEQ_GRAD_NAMES, where)
    _lecture_close(dx, [p["delta_x_0"], p["delta_x_1"]], "dx (the lecture's delta x_0, delta x_1)", where)
    _lecture_close(dh0, p["delta_out_prev_0"], "dh0 (the lecture's Delta out_-1)", where)
    _lecture_close(dc0, p["delta_state_0"] * p["gates_0"][2], "dc0 (the lecture's delta state_0 times f_0)", where)
    _lecture_close(db, p["db"], "db", where)
    _lecture_close(dW, p["dW"], "dW", where)
    _lecture_close(dU, p["dU"], "dU", where)
    g = np.random.default_rng(63)
    cases = []
    for oracle, lstm_args in [("torch", _random_lstm(g, 4, 3, 2, 3))]:
        T, N, _ = lstm_args[0].shape
        H = lstm_args[1].shape[1]
        cases.append((oracle, lstm_args, g.standard_normal((T, N, H)), g.standard_normal((N, H)),
                      g.standard_normal((N, H))))
    _compare_backward(fn, cases, ref)


def _sequence_central_differences(ref: Any, args: Sequence[np.ndarray], dout, dh_last, dc_last,
                                  eps: float = 1e-6) -> list[np.ndarray]:
    arrays = [np.array(a, dtype=float) for a in args]

    def loss() -> float:
        out, (h_T, c_T) = ref.lstm_forward_per_gate(*arrays)
        return float(np.sum(out * dout) + np.sum(h_T * dh_last) + np.sum(c_T * dc_last))

    return numerical_gradient(loss, arrays, eps)


def _compare_backward(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    """Each case ``(oracle, (x, h0, c0, W, U, b), dout, dh_last, dc_last)``: the six gradients
    of BPTT over the caches of ``ref.lstm_forward_stepwise`` against ``"torch"`` (torch.nn.LSTM's
    autograd) or ``"central differences"`` (of ``ref.lstm_forward_per_gate``); the calls of
    ``ref.lstm_backward_calls`` stand in for the student's ``lstm_cell_backward``."""
    __tracebackhide__ = True
    for oracle, args, dout, dh_last, dc_last in cases:
        T, N, D = args[0].shape
        H = args[1].shape[1]
        if oracle == "torch":
            want, name, tol = _torch_autograd(args, dout, dh_last, dc_last), "torch.nn.LSTM's autograd", TORCH_TOL
        else:
            want = _sequence_central_differences(ref, args, dout, dh_last, dc_last)
            name, tol = "central differences", NUMERIC_TOL
        _, _, caches = ref.lstm_forward_stepwise(*args)
        _, calls = ref.lstm_backward_calls(dout, caches, dh_last, dc_last)
        where = f"lstm_backward on T={T}, N={N}, D={D}, H={H} with dh_last and dc_last, against {name}"
        res = run_student(_with_replays, fn, _replays(calls), dout.copy(), copy.deepcopy(caches),
                          dh_last.copy(), dc_last.copy(), forbid=_BACKWARD_FORBID,
                          label="backpropagation through time", what=where)
        _compare_grads(_unpack(res, 6, SEQ_GRAD_NAMES, where), want, SEQ_GRAD_NAMES, where, **tol)


# --- 6. torch's layout -----------------------------------------------------------------------------

_LAYOUT_FORBID = [*TORCH_TOOLS, "gpudl.lstm._torch_rows"]


@exercise
def to_torch_weights(fn: Callable) -> None:
    """``fn(W, U, b)`` -> ``weight_ih, weight_hh, bias_ih, bias_hh`` for torch.nn.LSTM; checked by
    running torch's LSTM with them."""
    __tracebackhide__ = True
    _compare_to_torch_weights(fn, [_random_lstm(np.random.default_rng(64), 3, 2, 3, 2)])


def _compare_to_torch_weights(fn: Callable, cases: Sequence[tuple]) -> None:
    """Each case ``(x, h0, c0, W, U, b)``: torch.nn.LSTM holding the student's four arrays
    against torch.nn.LSTM holding ``W, U, b`` (``gpudl.lstm.torch_lstm``), on ``x, h0, c0``."""
    __tracebackhide__ = True
    import torch

    names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    for x, h0, c0, W, U, b in cases:
        T, N, D = x.shape
        H = h0.shape[1]
        where = f"to_torch_weights for D={D}, H={H}"
        res = call_student(fn, W.copy(), U.copy(), b.copy(), forbid=_LAYOUT_FORBID,
                           label="the conversion to torch's layout", what=where)
        got = _unpack(res, 4, names, where)
        arrays = []
        for name, value, shape in zip(names, got, [(4 * H, D), (4 * H, H), (4 * H,), (4 * H,)]):
            arr = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value, dtype=float)
            if arr.shape != shape:
                raise GradingError(f"{where}: your {name} has shape {arr.shape}, torch.nn.LSTM({D}, {H}) expects {shape}")
            arrays.append(arr)
        module = torch.nn.LSTM(D, H).double()
        state = (torch.from_numpy(h0)[None], torch.from_numpy(c0)[None])
        with torch.no_grad():
            for name, arr in zip(("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"), arrays):
                getattr(module, name).copy_(torch.from_numpy(arr))
            out, (_, c_n) = module(torch.from_numpy(x), state)
            r_out, (_, r_c) = lstm.torch_lstm(W, U, b)(torch.from_numpy(x), state)
        try:
            k = T * (D + H + 1)
            _close(out.numpy(), r_out.numpy(), "torch.nn.LSTM's output with your weights", k=k)
            _close(c_n[0].numpy(), r_c[0].numpy(), "torch.nn.LSTM's final cell state with your weights", k=k)
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
def sgd_step(fn: Callable) -> None:
    """``fn(params, grads, lr)`` -> a dict of updated parameters, one per key of ``params``."""
    __tracebackhide__ = True
    p = lstm.lecture_printed()
    e = lstm.lecture_example()
    params = {"W": e["W"], "U": e["U"], "b": e["b"]}
    grads = {"W": p["dW"], "U": p["dU"], "b": p["db"]}
    where = "the lecture's update (its printed dW, dU, db, learning rate 0.1)"
    new = _call_sgd_step(fn, params, grads, e["lr"], where, "sgd_step")
    hints = " (the slide's rule 'w+ = w + lr * grad(w)' climbs the loss; descend: w - lr * grad)"
    for k in ("W", "U", "b"):
        try:
            _lecture_close(new[k], p[f"new_{k}"], f"new {k}", where)
        except GradingError as exc:
            raise GradingError(f"{exc}{hints}") from None
    g = np.random.default_rng(65)
    _compare_sgd_step(fn, [(_random_params(g, 3, 2, 1), float(g.uniform(0.01, 1)))], expected(LAB))


def _compare_sgd_step(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    """Each case ``((params, grads), lr)`` against ``ref.sgd_step``."""
    __tracebackhide__ = True
    for (params, grads), lr in cases:
        where = f"sgd_step with lr = {lr:.4g} on the keys {sorted(params)}"
        want = ref.sgd_step(params, grads, lr)
        new = _call_sgd_step(fn, params, grads, lr, where, where)
        for k in params:
            try:
                _close(new[k], want[k], f"new {k}", k=4)
            except GradingError as exc:
                raise GradingError(f"{where}:\n{exc}") from None


@student_side
def _sgd_step_and_its_arguments(fn: Callable, params: Any, grads: Any, lr: Any) -> dict[str, Any]:
    """(Student side) ``fn(params, grads, lr)``, and ``params`` and ``grads`` as they are after the call."""
    new = fn(params, grads, lr)
    return {"new": new, "params": params, "grads": grads}


def _changed_entries(after: Any, before: Mapping[str, Any]) -> list[str]:
    """The keys of ``before`` whose value ``after`` no longer holds (and keys ``after`` added)."""
    if not isinstance(after, Mapping):
        return ["the dict itself"]
    def unchanged(key: str) -> bool:
        try:
            return bool(np.array_equal(np.asarray(after[key], dtype=float), np.asarray(before[key], dtype=float)))
        except (TypeError, ValueError):
            return False

    changed = [k for k in before if k not in after or not unchanged(k)]
    return changed + [k for k in after if k not in before]


def _call_sgd_step(fn: Callable, params: Mapping[str, Any], grads: Mapping[str, Any], lr: float, where: str,
                   what: str) -> Mapping[str, Any]:
    """The student's ``sgd_step`` on copies of ``params`` and ``grads``: its result as a dict of
    every parameter, after checking that it left both arguments as they were."""
    __tracebackhide__ = True
    seen = run_student(_sgd_step_and_its_arguments, fn, copy.deepcopy(params), copy.deepcopy(grads), lr,
                       label="a step of gradient descent", what=what)
    for name, before in (("params", params), ("grads", grads)):
        changed = _changed_entries(seen[name], before)
        if changed:
            raise GradingError(
                f"{where}: your sgd_step changed the {name} it was given ({name}[{changed[0]!r}]"
                + (f" and {len(changed) - 1} more" if len(changed) > 1 else "") + "): it updates them in place "
                "(`p -= lr * g`, `params[k] = ...`). Return a NEW dict and leave the arguments as they were: "
                "the caller may still need the old parameters (train_step's, a training loop's).")
    return _as_param_dict(seen["new"], params, where)


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
def train_step(fn: Callable) -> None:
    """``fn(params, x, y, lr)`` -> ``loss, new_params`` (checked with the expected
    ``lstm_forward``, ``lstm_backward`` and ``sgd_step`` in place of the student's)."""
    __tracebackhide__ = True
    g = np.random.default_rng(66)
    _compare_train_step(fn, [(init_params(g, 1, 5, 1), *sine_batch(g, 6, 3), 0.1)], expected(LAB))


def _compare_train_step(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    """Each case ``(params, x, y, lr)``: the loss and the new parameters against
    ``ref.train_step_calls``, whose calls of the earlier exercises stand in for the student's."""
    __tracebackhide__ = True
    for params, x, y, lr in cases:
        T, N, D = x.shape
        where = f"train_step on T={T}, N={N}, D={D}, H={params['U'].shape[1]}, K={y.shape[2]}, lr={lr:.3g}"
        (r_loss, r_new), calls = ref.train_step_calls(params, x, y, lr)
        res = run_student(_with_replays, fn, _replays(calls), copy.deepcopy(params), x.copy(), y.copy(), lr,
                          forbid=[*AUTOGRAD, *TORCH_LSTM, *TORCH_TOOLS], label="a training step", what=where)
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
# The visible check says whether an answer is well-formed (@question); the grader judges it.

@exercise
@question
def cell_gradient_question(answer: Any) -> None:
    """Why does the cell state carry gradients over many steps? (One letter.)"""
    __tracebackhide__ = True
    letters = choice_letters(answer, "ABCD")
    if len(letters) != 1:
        raise GradingError(f"answer with one letter of A-D, got {answer!r}")


@exercise
@question
def batched_gemms_question(answer: Any) -> None:
    """Which backward products can be one GEMM over the whole sequence? (Every letter that applies.)"""
    __tracebackhide__ = True
    choice_letters(answer, "ABCD")
