"""The answers of lab06_lstm_bptt (the LSTM, forward and backward through time), in the lab's
reading order. The lecture's notation: the four gates are stacked ``(a, i, f, o)`` (``a`` the
input activation, torch's ``g``); time-major ``x (T, N, D)``, ``h0, c0 (N, H)``, ``W (4H, D)``,
``U (4H, H)``, ``b (4H,)``.

1. ``lstm_cell_forward``: one step, ``h, c`` and a dict cache.
2. ``lstm_forward_stepwise``: the lab's ``lstm_forward``, a loop of cell steps;
   ``lstm_forward_calls``: the same with the calls of ``lstm_cell_forward`` it makes, as the
   entries of a ``Replay`` (what the check puts in place of the student's cell);
   ``lstm_forward_per_gate``: the lecture's equations literally (8 small products per step),
   the forward the central differences of the hidden checks go through.
3. ``lstm_flops``: FLOPs of the matrix products, forward (and backward).
4. ``lstm_cell_backward``: one step backward.
5. ``lstm_backward_stepwise``: the lab's ``lstm_backward`` (BPTT over the cell caches);
   ``lstm_backward_calls``: the same with its calls of ``lstm_cell_backward``.
6. Questions: their answers are hashed in the hidden checks (``gpudl_instructor.checks.lab06``).
7. ``to_torch``: the lab's ``to_torch_weights`` (torch's (i, f, g, o) order, two biases);
   ``from_torch``: the way back.
8. ``sgd_step``: plain gradient descent on a dict of parameters.
9. ``train_step_reference``: the lab's ``train_step`` (an LSTM with a linear read-out, one step);
   ``train_step_calls``: the same with its calls of the lab's ``lstm_forward``,
   ``lstm_backward`` and ``sgd_step``.

Beyond the lab: the fast path libraries take (``lstm_forward``, ``lstm_backward`` with
``LSTMCache``, ``LSTMGrads``: the input projection of the whole sequence as one GEMM, one fused
four-gate GEMM per step, the weight gradients as GEMMs over the whole sequence) and
``lstm_torch_loop``, the recurrence as a per-step loop of torch operations.

The course edition keeps the lecture's worked example (``gpudl.lstm.lecture_example``,
``lecture_printed``) and torch.nn.LSTM with given weights (``gpudl.lstm.torch_lstm``,
``torch_lstm_call``), the independent oracle of the gradients.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

import numpy as np

from gpudl.lstm import GATES, TORCH_GATE_ORDER, sigmoid
from gpudl.references import reference

__all__ = ["lstm_cell_forward", "lstm_forward_stepwise", "lstm_forward_calls", "lstm_forward_per_gate", "lstm_flops",
           "lstm_cell_backward", "lstm_backward_stepwise", "lstm_backward_calls", "to_torch", "from_torch",
           "sgd_step", "train_step_reference", "train_step_calls", "LSTMCache", "LSTMGrads", "lstm_forward",
           "lstm_backward", "lstm_torch_loop"]


# --- shapes ------------------------------------------------------------------------------

def _arr(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def _check_params(W: np.ndarray, U: np.ndarray, b: np.ndarray, D: int, H: int) -> None:
    if W.shape != (4 * H, D):
        hint = " did you pass W transposed?" if W.shape == (D, 4 * H) else ""
        raise ValueError(f"expected W of shape (4H, D) = ({4 * H}, {D}), got {W.shape}:{hint} "
                         "W stacks the rows of the gates a, i, f, o")
    if U.shape != (4 * H, H):
        hint = " did you pass U transposed?" if U.shape == (H, 4 * H) else ""
        raise ValueError(f"expected U of shape (4H, H) = ({4 * H}, {H}), got {U.shape}:{hint}")
    if b.shape != (4 * H,):
        raise ValueError(f"expected b of shape (4H,) = ({4 * H},), got {b.shape}")


def _check_sequence(x, h0, c0, W, U, b) -> tuple[int, int, int, int]:
    if x.ndim != 3:
        raise ValueError(f"expected x of shape (T, N, D), got {x.shape}: "
                         "a single sequence is x[:, None, :] (time-major, like torch.nn.LSTM)")
    T, N, D = x.shape
    if h0.ndim != 2 or h0.shape[0] != N:
        raise ValueError(f"expected h0 of shape (N, H) with N = {N}, got {h0.shape}")
    H = h0.shape[1]
    if c0.shape != (N, H):
        raise ValueError(f"expected c0 of shape (N, H) = ({N}, {H}) like h0, got {c0.shape}")
    _check_params(W, U, b, D, H)
    return T, N, D, H


def _check_step(x_t, h_prev, c_prev, W, U, b) -> tuple[int, int, int]:
    if x_t.ndim != 2 or h_prev.ndim != 2 or h_prev.shape[0] != x_t.shape[0]:
        raise ValueError(f"expected x_t (N, D) and h_prev (N, H) with the same N, got {x_t.shape} and {h_prev.shape}")
    N, D = x_t.shape
    H = h_prev.shape[1]
    if c_prev.shape != (N, H):
        raise ValueError(f"expected c_prev of shape (N, H) = ({N}, {H}) like h_prev, got {c_prev.shape}")
    _check_params(W, U, b, D, H)
    return N, D, H


def _sequence_args(x, h0, c0, W, U, b) -> tuple[np.ndarray, ...]:
    return tuple(_arr(v) for v in (x, h0, c0, W, U, b))


# --- 1. one step forward ------------------------------------------------------------------------

@reference
def lstm_cell_forward(x_t, h_prev, c_prev, W, U, b):
    """One LSTM step: ``h, c, cache`` for ``x_t`` (N, D), ``h_prev``, ``c_prev`` (N, H).

    The four gates come out of one product per input (``x_t W^T`` and ``h_prev U^T``, each
    (N, 4H)). ``cache`` is a dict with the keys ``x, h_prev, c_prev, a, i, f, o, c, W, U``.
    """
    x_t, h_prev, c_prev, W, U, b = _sequence_args(x_t, h_prev, c_prev, W, U, b)
    _, _, H = _check_step(x_t, h_prev, c_prev, W, U, b)
    z = x_t @ W.T + h_prev @ U.T + b                                  # (N, 4H)
    a = np.tanh(z[:, :H])
    i, f, o = sigmoid(z[:, H:2 * H]), sigmoid(z[:, 2 * H:3 * H]), sigmoid(z[:, 3 * H:])
    c = a * i + f * c_prev                                            # (N, H)
    h = o * np.tanh(c)
    cache = {"x": x_t, "h_prev": h_prev, "c_prev": c_prev, "a": a, "i": i, "f": f, "o": o, "c": c, "W": W, "U": U}
    return h, c, cache


# --- 2. the sequence forward ----------------------------------------------------------------------

@reference
def lstm_forward_stepwise(x, h0, c0, W, U, b):
    """``out (T, N, H), (h_T, c_T), caches``: ``lstm_cell_forward`` at each step, ``caches`` the
    list of its T caches (the lab's ``lstm_forward``)."""
    result, _ = lstm_forward_calls(x, h0, c0, W, U, b)
    return result


@reference
def lstm_forward_calls(x, h0, c0, W, U, b):
    """``(out, (h_T, c_T), caches), {"lstm_cell_forward": entries}``: the sequence forward and
    its calls of the cell, ``[(args, {}, result), ...]`` in time order, as the student's
    ``lstm_forward`` makes them (``x[t]``, the previous step's ``h`` and ``c``, ``W, U, b``)."""
    x, h0, c0, W, U, b = _sequence_args(x, h0, c0, W, U, b)
    T, N, D, H = _check_sequence(x, h0, c0, W, U, b)
    h, c, caches, outs, calls = h0, c0, [], [], []
    for t in range(T):
        args = (x[t], h, c, W, U, b)
        h, c, cache = lstm_cell_forward(*args)
        calls.append((args, {}, (h, c, cache)))
        outs.append(h)
        caches.append(cache)
    out = np.stack(outs) if outs else np.empty((0, N, H), dtype=np.result_type(x, h0, W))
    return (out, (h, c), caches), {"lstm_cell_forward": calls}


@reference
def lstm_forward_per_gate(x, h0, c0, W, U, b):
    """The lecture's equations literally: per step, per gate, ``W_g x_t + U_g h + b_g``.

    Eight small matrix products per step (four gates, two inputs). Returns
    ``out (T, N, H), (h_T, c_T)``; the same numbers as ``lstm_forward_stepwise``.
    """
    x, h0, c0, W, U, b = _sequence_args(x, h0, c0, W, U, b)
    T, N, D, H = _check_sequence(x, h0, c0, W, U, b)
    blocks = {g: slice(k * H, (k + 1) * H) for k, g in enumerate(GATES)}
    Wg = {g: W[s] for g, s in blocks.items()}                         # (H, D) each
    Ug = {g: U[s] for g, s in blocks.items()}                         # (H, H) each
    bg = {g: b[s] for g, s in blocks.items()}
    h, c = h0, c0
    out = np.empty((T, N, H), dtype=np.result_type(x, h0, W))
    for t in range(T):
        zs = {g: x[t] @ Wg[g].T + h @ Ug[g].T + bg[g] for g in GATES}
        a, i, f, o = np.tanh(zs["a"]), sigmoid(zs["i"]), sigmoid(zs["f"]), sigmoid(zs["o"])
        c = a * i + f * c
        h = np.tanh(c) * o
        out[t] = h
    return out, (h, c)


# --- 3. FLOPs -------------------------------------------------------------------------------------

@reference
def lstm_flops(T: int, N: int, D: int, H: int, *, backward: bool = False) -> int:
    """FLOPs of an LSTM layer's matrix products (a multiply-add is 2 FLOPs; elementwise work
    not counted). Forward: ``2 T N 4H (D + H)``. The backward does twice that (``dx`` and
    ``dW`` for the input products, ``dh`` and ``dU`` for the recurrent ones); with
    ``backward=True`` the count is forward + backward."""
    T, N, D, H = (int(v) for v in (T, N, D, H))
    if min(T, N, D, H) < 1:
        raise ValueError(f"T, N, D, H must be positive, got {(T, N, D, H)}")
    forward = 2 * T * N * 4 * H * (D + H)
    return 3 * forward if backward else forward


# --- 4. one step backward ---------------------------------------------------------------------------

@reference
def lstm_cell_backward(dh, dc, cache):
    """Backward through one step: ``dx, dh_prev, dc_prev, dW, dU, db``.

    ``dh`` (N, H) is the whole gradient reaching this step's ``h`` (the loss's and the next
    step's), ``dc`` (N, H) the cell-state gradient coming back from the next step
    (``dc_prev`` of that step; zeros at the last step). ``dW, dU, db`` are this step's
    contributions, to be summed over the steps.
    """
    a, i, f, o, c = cache["a"], cache["i"], cache["f"], cache["o"], cache["c"]
    tanh_c = np.tanh(c)
    ds = dh * o * (1.0 - tanh_c ** 2) + dc                            # the lecture's delta state_t
    dz = np.concatenate([ds * i * (1.0 - a ** 2),                     # da
                         ds * a * i * (1.0 - i),                      # di
                         ds * cache["c_prev"] * f * (1.0 - f),        # df
                         dh * tanh_c * o * (1.0 - o)], axis=1)        # do          (N, 4H)
    dx = dz @ cache["W"]
    dh_prev = dz @ cache["U"]
    dc_prev = ds * f
    dW = dz.T @ cache["x"]
    dU = dz.T @ cache["h_prev"]
    db = dz.sum(axis=0)
    return dx, dh_prev, dc_prev, dW, dU, db


# --- 5. backpropagation through time -------------------------------------------------------------

@reference
def lstm_backward_stepwise(dout, caches, dh_last=None, dc_last=None):
    """Backpropagation through time over ``caches`` of ``lstm_forward_stepwise`` (the lab's
    ``lstm_backward``).

    ``dout`` (T, N, H) is the loss's gradient at each output ``h_t``; ``dh_last``, ``dc_last``
    (N, H) the gradients at the final states (None: zero). Returns
    ``dx (T, N, D), dh0, dc0, dW, dU, db``.
    """
    result, _ = lstm_backward_calls(dout, caches, dh_last, dc_last)
    return result


@reference
def lstm_backward_calls(dout, caches, dh_last=None, dc_last=None):
    """``(dx, dh0, dc0, dW, dU, db), {"lstm_cell_backward": entries}``: BPTT and its calls of
    the cell backward, ``[(args, {}, result), ...]`` for t = T-1, ..., 0, as the student's
    ``lstm_backward`` makes them (``dout[t]`` plus what step t+1 returned, ``caches[t]``)."""
    T = len(caches)
    dout = np.asarray(dout)
    if dout.shape[0] != T:
        raise ValueError(f"dout has {dout.shape[0]} steps but there are {T} caches")
    first = caches[0]
    dh_next = np.zeros_like(first["h_prev"]) if dh_last is None else np.asarray(dh_last)
    dc_next = np.zeros_like(first["c_prev"]) if dc_last is None else np.asarray(dc_last)
    dW, dU = np.zeros_like(first["W"], dtype=dout.dtype), np.zeros_like(first["U"], dtype=dout.dtype)
    db = np.zeros(first["W"].shape[0], dtype=dout.dtype)
    dxs: list[Any] = [None] * T
    calls = []
    for t in reversed(range(T)):
        args = (dout[t] + dh_next, dc_next, caches[t])
        step = lstm_cell_backward(*args)
        calls.append((args, {}, step))
        dxs[t], dh_next, dc_next, dW_t, dU_t, db_t = step
        dW += dW_t
        dU += dU_t
        db += db_t
    return (np.stack(dxs), dh_next, dc_next, dW, dU, db), {"lstm_cell_backward": calls}


# --- 7. torch's layout ------------------------------------------------------------------------------

def _torch_rows(H: int) -> np.ndarray:
    """Row indices into our (a, i, f, o) stacking that give torch's (i, f, g, o) stacking."""
    return np.concatenate([np.arange(GATES.index(g) * H, (GATES.index(g) + 1) * H) for g in TORCH_GATE_ORDER])


@reference
def to_torch(W, U, b) -> dict[str, np.ndarray]:
    """Our ``W, U, b`` as ``torch.nn.LSTM``'s ``weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0``
    (the lab's ``to_torch_weights`` returns the four values in this order).

    torch stacks the gates as (i, f, g, o) and adds two biases; ours go in ``bias_ih_l0`` and
    ``bias_hh_l0`` is zero.
    """
    W, U, b = _arr(W), _arr(U), _arr(b)
    H = U.shape[1]
    _check_params(W, U, b, W.shape[1], H)
    rows = _torch_rows(H)
    return {"weight_ih_l0": W[rows].copy(), "weight_hh_l0": U[rows].copy(),
            "bias_ih_l0": b[rows].copy(), "bias_hh_l0": np.zeros_like(b)}


@reference
def from_torch(lstm_or_state: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``W, U, b`` (NumPy, our gate order) from a one-layer ``torch.nn.LSTM`` or its state dict;
    ``b = bias_ih + bias_hh``."""
    state = lstm_or_state.state_dict() if hasattr(lstm_or_state, "state_dict") else lstm_or_state
    for key in ("weight_ih_l0", "weight_hh_l0"):
        if key not in state:
            raise KeyError(f"no {key!r}: expected a one-layer torch.nn.LSTM or its state dict, got keys {sorted(state)}")
    extra = [k for k in state if k.endswith("_reverse") or k.endswith("_l1") or "proj" in k]
    if extra:
        raise ValueError(f"only one-layer, unidirectional LSTMs without projections convert; found {extra}")
    Wt, Ut = _arr(state["weight_ih_l0"]), _arr(state["weight_hh_l0"])
    H = Ut.shape[1]
    bt = np.zeros(4 * H, dtype=Wt.dtype)
    for key in ("bias_ih_l0", "bias_hh_l0"):
        if key in state:
            bt = bt + _arr(state[key])
    back = np.argsort(_torch_rows(H))        # the inverse permutation
    return Wt[back].copy(), Ut[back].copy(), bt[back].copy()


# --- 8. gradient descent ----------------------------------------------------------------------------

@reference
def sgd_step(params: Mapping[str, Any], grads: Mapping[str, Any], lr: float) -> dict[str, np.ndarray]:
    """Plain gradient descent, ``p - lr * dp`` for every key of ``params`` (a new dict).

    (The slide's "w+ = w + lr * grad(w)" has the sign of gradient *ascent*; its worked
    example does ``W_new = W_old - lambda * dW``.)
    """
    missing = set(params) - set(grads)
    if missing:
        raise KeyError(f"no gradient for {sorted(missing)}")
    return {k: np.asarray(p) - lr * np.asarray(grads[k]) for k, p in params.items()}


# --- 9. a training step --------------------------------------------------------------------------

@reference
def train_step_reference(params: Mapping[str, Any], x: np.ndarray, y: np.ndarray, lr: float):
    """One step of gradient descent on an LSTM with a linear read-out (the lab's ``train_step``).

    ``y_hat_t = h_t Why^T + by``; loss ``E = sum over t, n, k of (y_hat - y)^2 / (2 N)``; the
    gradient flows from the read-out into ``h_t`` and back through time. Returns
    ``loss, new_params`` (the loss before the step).
    """
    result, _ = train_step_calls(params, x, y, lr)
    return result


@reference
def train_step_calls(params: Mapping[str, Any], x: np.ndarray, y: np.ndarray, lr: float):
    """``(loss, new_params), calls``: the training step and its calls of the lab's
    ``lstm_forward``, ``lstm_backward`` and ``sgd_step``, each ``[(args, {}, result)]`` with the
    arguments the student's ``train_step`` passes (every parameter given, defaults included)."""
    W, U, b, Why, by = (np.asarray(params[k]) for k in ("W", "U", "b", "Why", "by"))
    T, N, _ = x.shape
    H = U.shape[1]
    fwd_args = (x, np.zeros((N, H)), np.zeros((N, H)), W, U, b)
    fwd = lstm_forward_stepwise(*fwd_args)
    out, _, caches = fwd
    err = out @ Why.T + by - y                                  # (T, N, K)
    loss = 0.5 * float(np.sum(err ** 2)) / N
    dy = err / N
    grads = {"Why": np.einsum("tnk,tnh->kh", dy, out), "by": dy.sum(axis=(0, 1))}
    bwd_args = (dy @ Why, caches, None, None)
    bwd = lstm_backward_stepwise(*bwd_args)
    _, _, _, grads["W"], grads["U"], grads["b"] = bwd
    sgd_args = (dict(params), grads, lr)
    new = sgd_step(*sgd_args)
    calls = {"lstm_forward": [(fwd_args, {}, fwd)], "lstm_backward": [(bwd_args, {}, bwd)],
             "sgd_step": [(sgd_args, {}, new)]}
    return (loss, new), calls


# --- beyond the lab: the fast path ------------------------------------------------------------------

class LSTMGrads(NamedTuple):
    """Gradients of the loss with respect to each input of ``lstm_forward``."""

    dx: np.ndarray    # (T, N, D)
    dh0: np.ndarray   # (N, H)
    dc0: np.ndarray   # (N, H)
    dW: np.ndarray    # (4H, D)
    dU: np.ndarray    # (4H, H)
    db: np.ndarray    # (4H,)


@dataclass(frozen=True)
class LSTMCache:
    """What ``lstm_backward`` needs from ``lstm_forward``: inputs, activated gates and states."""

    x: np.ndarray        # (T, N, D)
    W: np.ndarray        # (4H, D)
    U: np.ndarray        # (4H, H)
    gates: np.ndarray    # (T, N, 4H): a, i, f, o after their nonlinearities
    h: np.ndarray        # (T + 1, N, H): h[0] = h0, h[t + 1] = output of step t
    c: np.ndarray        # (T + 1, N, H): c[0] = c0
    tanh_c: np.ndarray   # (T, N, H): tanh(c[t + 1])

    def __post_init__(self) -> None:
        T, N, D = self.x.shape
        H = self.U.shape[1]
        expected = {"gates": (T, N, 4 * H), "h": (T + 1, N, H), "c": (T + 1, N, H), "tanh_c": (T, N, H)}
        for name, shape in expected.items():
            if getattr(self, name).shape != shape:
                raise ValueError(f"LSTMCache.{name} has shape {getattr(self, name).shape}, expected {shape}")


@reference
def lstm_forward(x, h0, c0, W, U, b):
    """``out (T, N, H), (h_T, c_T), cache``, computed the way libraries do.

    1. the input projection of the whole sequence, ``x W^T + b``, as ONE GEMM of
       (T N, D) x (D, 4H), written straight into the preallocated gate array;
    2. per step, ONE fused GEMM ``h_{t-1} U^T`` (N, H) x (H, 4H) for all four gates, added in
       place, then the nonlinearities in place on the gate blocks.

    Works in the inputs' dtype (float32 stays float32).
    """
    x, h0, c0, W, U, b = _sequence_args(x, h0, c0, W, U, b)
    T, N, D, H = _check_sequence(x, h0, c0, W, U, b)
    dt = np.result_type(x, h0, c0, W, U, b)
    if dt.kind != "f":
        dt = np.dtype(np.float64)
    x, W, U, b = (np.ascontiguousarray(v, dtype=dt) for v in (x, W, U, b))
    gates = np.empty((T, N, 4 * H), dtype=dt)
    h = np.empty((T + 1, N, H), dtype=dt)
    c = np.empty((T + 1, N, H), dtype=dt)
    tanh_c = np.empty((T, N, H), dtype=dt)
    h[0], c[0] = h0, c0
    np.matmul(x.reshape(T * N, D), W.T, out=gates.reshape(T * N, 4 * H))   # input projection, one GEMM
    gates += b
    UT = np.ascontiguousarray(U.T)                                          # (H, 4H)
    rec = np.empty((N, 4 * H), dtype=dt)
    tmp = np.empty((N, H), dtype=dt)
    for t in range(T):
        g = gates[t]                                                        # (N, 4H) view
        np.matmul(h[t], UT, out=rec)                                        # the fused recurrent GEMM
        g += rec
        np.tanh(g[:, :H], out=g[:, :H])                                     # a
        sigmoid(g[:, H:], out=g[:, H:])                                     # i, f, o
        a, i, f, o = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
        np.multiply(a, i, out=c[t + 1])
        np.multiply(f, c[t], out=tmp)
        c[t + 1] += tmp
        np.tanh(c[t + 1], out=tanh_c[t])
        np.multiply(o, tanh_c[t], out=h[t + 1])
    cache = LSTMCache(x=x, W=W, U=U, gates=gates, h=h, c=c, tanh_c=tanh_c)
    return h[1:], (h[T], c[T]), cache


@reference
def lstm_backward(dout, cache: LSTMCache, dh_last=None, dc_last=None) -> LSTMGrads:
    """Backpropagation through time for ``lstm_forward``: ``LSTMGrads(dx, dh0, dc0, dW, dU, db)``.

    ``dout`` (T, N, H) is the loss's gradient at each output (None: zeros), ``dh_last``,
    ``dc_last`` (N, H) the gradients at the final states (None: zeros). Only
    ``dh_{t-1} = dz_t U`` must stay inside the time loop; the gate gradients of all steps
    are kept in one (T, N, 4H) array, and ``dx``, ``dW``, ``dU`` and ``db`` are then each one
    GEMM (or sum) over the whole sequence.
    """
    x, W, U, gates, h, c, tanh_c = cache.x, cache.W, cache.U, cache.gates, cache.h, cache.c, cache.tanh_c
    T, N, D = x.shape
    H = U.shape[1]
    dt = gates.dtype
    if dout is None:
        dout = np.zeros((T, N, H), dtype=dt)
    dout = _arr(dout)
    if dout.shape != (T, N, H):
        raise ValueError(f"expected dout of shape (T, N, H) = ({T}, {N}, {H}), got {dout.shape}")
    dh = np.zeros((N, H), dtype=dt) if dh_last is None else np.array(_arr(dh_last), dtype=dt)
    dc = np.zeros((N, H), dtype=dt) if dc_last is None else np.array(_arr(dc_last), dtype=dt)
    if dh.shape != (N, H) or dc.shape != (N, H):
        raise ValueError(f"expected dh_last and dc_last of shape (N, H) = ({N}, {H}), got {dh.shape}, {dc.shape}")
    dz = np.empty((T, N, 4 * H), dtype=dt)
    tmp = np.empty((N, H), dtype=dt)
    for t in reversed(range(T)):
        g, d = gates[t], dz[t]
        a, i, f, o = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
        da, di, df, do = d[:, :H], d[:, H:2 * H], d[:, 2 * H:3 * H], d[:, 3 * H:]
        dh += dout[t]                                           # the loss's and the next step's
        tc = tanh_c[t]
        # do = dh * tanh(c) * o * (1 - o)
        np.multiply(dh, tc, out=do)
        np.subtract(1.0, o, out=tmp)
        tmp *= o
        do *= tmp
        # dc += dh * o * (1 - tanh(c)^2): the lecture's delta state_t
        np.multiply(tc, tc, out=tmp)
        np.subtract(1.0, tmp, out=tmp)
        tmp *= o
        tmp *= dh
        dc += tmp
        # da = dc * i * (1 - a^2)
        np.multiply(a, a, out=tmp)
        np.subtract(1.0, tmp, out=tmp)
        np.multiply(dc, i, out=da)
        da *= tmp
        # di = dc * a * i * (1 - i)
        np.subtract(1.0, i, out=tmp)
        tmp *= i
        np.multiply(dc, a, out=di)
        di *= tmp
        # df = dc * c_{t-1} * f * (1 - f)
        np.subtract(1.0, f, out=tmp)
        tmp *= f
        np.multiply(dc, c[t], out=df)
        df *= tmp
        # back one step: the cell state through f only, the output through U
        dc *= f
        np.matmul(d, U, out=dh)
    dz2 = dz.reshape(T * N, 4 * H)
    dx = (dz2 @ W).reshape(T, N, D)                             # one GEMM for all steps
    dW = dz2.T @ x.reshape(T * N, D)                            # one GEMM for all steps
    dU = dz2.T @ h[:T].reshape(T * N, H)                        # step t pairs with h_{t-1} = h[t]
    db = dz2.sum(axis=0)
    return LSTMGrads(dx, dh, dc, dW, dU, db)


@reference
def lstm_torch_loop(x, h0, c0, W, U, b):
    """The same recurrence in torch ops, step by step (autograd does the backward).

    ``x (T, N, D)`` and the rest are torch tensors on any device; the input projection is one
    GEMM, then one fused ``h U^T`` per step: what a framework does without cuDNN's fused RNN.
    Returns ``out (T, N, H), (h_T, c_T)``.
    """
    import torch

    H = h0.shape[1]
    xproj = torch.addmm(b, x.reshape(-1, x.shape[2]), W.t()).view(x.shape[0], x.shape[1], 4 * H)
    h, c, outs = h0, c0, []
    for t in range(x.shape[0]):
        z = xproj[t] + h @ U.t()
        a = torch.tanh(z[:, :H])
        i, f, o = torch.sigmoid(z[:, H:]).split(H, dim=1)
        c = a * i + f * c
        h = o * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs), (h, c)
