"""The LSTM: forward with a cache, backpropagation through time, and the GEMMs inside.

The lecture's notation ("LSTM - Example"): the four gates are stacked in the order
``(a, i, f, o)``: ``a`` the input activation (torch and cuDNN call it ``g``), ``i`` the input
gate, ``f`` the forget gate, ``o`` the output gate. For a batch of ``N`` sequences of ``T``
steps, time-major like ``torch.nn.LSTM``::

    x (T, N, D)   h0, c0 (N, H)   W (4H, D)   U (4H, H)   b (4H,)

    z_t   = x_t W^T + h_{t-1} U^T + b               (N, 4H)  one product per input, 4 gates fused
    a_t   = tanh(z_a)   i_t = s(z_i)   f_t = s(z_f)   o_t = s(z_o)      (s: the sigmoid)
    c_t   = a_t * i_t + f_t * c_{t-1}                (the lecture's state_t)
    h_t   = o_t * tanh(c_t)                          (the lecture's out_t)

Backward through time, with ``dh_t`` the gradient reaching ``h_t`` (from the loss at step t and
from step t+1) and ``dc_next`` the cell-state gradient coming back from step t+1::

    dc_t  = dh_t * o_t * (1 - tanh^2 c_t) + dc_next       (the lecture's delta state_t)
    da = dc_t * i * (1 - a^2)     di = dc_t * a * i(1 - i)
    df = dc_t * c_{t-1} * f(1 - f)   do = dh_t * tanh(c_t) * o(1 - o)
    dx_t = dz W    dh_{t-1} += dz U    dc_{t-1} = dc_t * f_t    dW += dz^T x_t   dU += dz^T h_{t-1}

``c_{t-1}`` reaches ``c_t`` only through an elementwise product with ``f``: no matrix, no
squashing derivative, which is why the cell state carries gradients over many steps.

Public names, in order:

``GATES``, ``sigmoid``
``lstm_cell_forward``, ``lstm_cell_backward``   one step; a dict cache
``lstm_forward_per_gate``       the lecture's equations literally: 8 small products per step
``lstm_forward_stepwise``, ``lstm_backward_stepwise``   a loop of cell steps (what lab 06 builds)
``LSTMCache``, ``LSTMGrads``
``lstm_forward``, ``lstm_backward``   the fast path: the input projection of the whole sequence as
                                one GEMM, one fused four-gate GEMM per step, preallocated arrays,
                                and the weight gradients as GEMMs over the whole sequence
``sgd_step``
``TORCH_GATE_ORDER``, ``to_torch``, ``from_torch``, ``torch_lstm``   torch.nn.LSTM's layout (i, f, g, o)
``lstm_torch_loop``             the recurrence as a per-step loop of torch ops (any device)
``lstm_flops``                  FLOPs of the matrix products, forward and backward
``lecture_example``, ``lecture_printed``   the lecture's two-step example: its inputs, and the numbers it
                                prints (``seed_example``, ``seed_printed``: the same, by their old names)

``gpudl bench lstm`` is ``gpudl.benchmarks.lstm``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

import numpy as np

from .references import reference

GATES = ("a", "i", "f", "o")          # the lecture's order of the four blocks of rows of W, U, b
TORCH_GATE_ORDER = ("i", "f", "a", "o")   # torch.nn.LSTM / cuDNN: (i, f, g, o), with g = our a


# --- shapes ------------------------------------------------------------------------------

def _arr(x: Any, name: str) -> np.ndarray:
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


def sigmoid(z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The logistic function as ``(1 + tanh(z / 2)) / 2``: no overflow for any ``z``.

    With ``out`` (may be ``z`` itself) it works in place, allocating nothing.
    """
    out = np.multiply(z, 0.5, out=out)
    np.tanh(out, out=out)
    out += 1.0
    out *= 0.5
    return out


# --- one step --------------------------------------------------------------------------

@reference
def lstm_cell_forward(x_t, h_prev, c_prev, W, U, b):
    """One LSTM step: ``h, c, cache`` for ``x_t`` (N, D), ``h_prev``, ``c_prev`` (N, H).

    The four gates come out of one product per input (``x_t W^T`` and ``h_prev U^T``, each
    (N, 4H)). ``cache`` is a dict with the keys ``x, h_prev, c_prev, a, i, f, o, c, W, U``.
    """
    x_t, h_prev, c_prev = (_arr(v, n) for v, n in ((x_t, "x_t"), (h_prev, "h_prev"), (c_prev, "c_prev")))
    W, U, b = _arr(W, "W"), _arr(U, "U"), _arr(b, "b")
    _, _, H = _check_step(x_t, h_prev, c_prev, W, U, b)
    z = x_t @ W.T + h_prev @ U.T + b                                  # (N, 4H)
    a = np.tanh(z[:, :H])
    i, f, o = sigmoid(z[:, H:2 * H]), sigmoid(z[:, 2 * H:3 * H]), sigmoid(z[:, 3 * H:])
    c = a * i + f * c_prev                                            # (N, H)
    h = o * np.tanh(c)
    cache = {"x": x_t, "h_prev": h_prev, "c_prev": c_prev, "a": a, "i": i, "f": f, "o": o, "c": c, "W": W, "U": U}
    return h, c, cache


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


# --- the lecture's equations, gate by gate ---------------------------------------------------

@reference
def lstm_forward_per_gate(x, h0, c0, W, U, b):
    """The lecture's equations literally: per step, per gate, ``W_g x_t + U_g h + b_g``.

    Eight small matrix products per step (four gates, two inputs). Returns
    ``out (T, N, H), (h_T, c_T)``; the same numbers as ``lstm_forward``.
    """
    x, h0, c0, W, U, b = (_arr(v, n) for v, n in zip((x, h0, c0, W, U, b), "x h0 c0 W U b".split()))
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


# --- a loop of cell steps (what the lab builds) --------------------------------------------

@reference
def lstm_forward_stepwise(x, h0, c0, W, U, b):
    """``out (T, N, H), (h_T, c_T), caches``: ``lstm_cell_forward`` at each step, ``caches`` the
    list of its T caches."""
    x, h0, c0, W, U, b = (_arr(v, n) for v, n in zip((x, h0, c0, W, U, b), "x h0 c0 W U b".split()))
    T, N, D, H = _check_sequence(x, h0, c0, W, U, b)
    h, c, caches, outs = h0, c0, [], []
    for t in range(T):
        h, c, cache = lstm_cell_forward(x[t], h, c, W, U, b)
        outs.append(h)
        caches.append(cache)
    out = np.stack(outs) if outs else np.empty((0, N, H), dtype=np.result_type(x, h0, W))
    return out, (h, c), caches


@reference
def lstm_backward_stepwise(dout, caches, dh_last=None, dc_last=None):
    """Backpropagation through time over ``caches`` of ``lstm_forward_stepwise``.

    ``dout`` (T, N, H) is the loss's gradient at each output ``h_t``; ``dh_last``, ``dc_last``
    (N, H) the gradients at the final states (None: zero). Returns
    ``dx (T, N, D), dh0, dc0, dW, dU, db``.
    """
    T = len(caches)
    dout = np.asarray(dout)
    if dout.shape[0] != T:
        raise ValueError(f"dout has {dout.shape[0]} steps but there are {T} caches")
    first = caches[0]
    dh_next = np.zeros_like(first["h_prev"]) if dh_last is None else np.asarray(dh_last)
    dc_next = np.zeros_like(first["c_prev"]) if dc_last is None else np.asarray(dc_last)
    dW, dU = np.zeros_like(first["W"], dtype=dout.dtype), np.zeros_like(first["U"], dtype=dout.dtype)
    db = np.zeros(first["W"].shape[0], dtype=dout.dtype)
    dxs = [None] * T
    for t in reversed(range(T)):
        dxs[t], dh_next, dc_next, dW_t, dU_t, db_t = lstm_cell_backward(dout[t] + dh_next, dc_next, caches[t])
        dW += dW_t
        dU += dU_t
        db += db_t
    return np.stack(dxs), dh_next, dc_next, dW, dU, db


# --- the fast path ---------------------------------------------------------------------------

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
    x, h0, c0, W, U, b = (_arr(v, n) for v, n in zip((x, h0, c0, W, U, b), "x h0 c0 W U b".split()))
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
    dout = _arr(dout, "dout")
    if dout.shape != (T, N, H):
        raise ValueError(f"expected dout of shape (T, N, H) = ({T}, {N}, {H}), got {dout.shape}")
    dh = np.zeros((N, H), dtype=dt) if dh_last is None else np.array(_arr(dh_last, "dh_last"), dtype=dt)
    dc = np.zeros((N, H), dtype=dt) if dc_last is None else np.array(_arr(dc_last, "dc_last"), dtype=dt)
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


# --- training -----------------------------------------------------------------------------

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


# --- torch.nn.LSTM ---------------------------------------------------------------------------

def _torch_rows(H: int) -> np.ndarray:
    """Row indices into our (a, i, f, o) stacking that give torch's (i, f, g, o) stacking."""
    return np.concatenate([np.arange(GATES.index(g) * H, (GATES.index(g) + 1) * H) for g in TORCH_GATE_ORDER])


@reference
def to_torch(W, U, b) -> dict[str, np.ndarray]:
    """Our ``W, U, b`` as ``torch.nn.LSTM``'s ``weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0``.

    torch stacks the gates as (i, f, g, o) and adds two biases; ours go in ``bias_ih_l0`` and
    ``bias_hh_l0`` is zero.
    """
    W, U, b = _arr(W, "W"), _arr(U, "U"), _arr(b, "b")
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
    Wt, Ut = _arr(state["weight_ih_l0"], "weight_ih_l0"), _arr(state["weight_hh_l0"], "weight_hh_l0")
    H = Ut.shape[1]
    bt = np.zeros(4 * H, dtype=Wt.dtype)
    for key in ("bias_ih_l0", "bias_hh_l0"):
        if key in state:
            bt = bt + _arr(state[key], key)
    back = np.argsort(_torch_rows(H))        # the inverse permutation
    return Wt[back].copy(), Ut[back].copy(), bt[back].copy()


@reference
def torch_lstm(W, U, b, *, dtype: Any = None, device: str | None = None):
    """A ``torch.nn.LSTM(D, H)`` holding our ``W, U, b`` (dtype: torch's, default float64 for
    float64 weights, else float32)."""
    import torch

    W = _arr(W, "W")
    D, H = W.shape[1], _arr(U, "U").shape[1]
    if dtype is None:
        dtype = torch.float64 if W.dtype == np.float64 else torch.float32
    lstm = torch.nn.LSTM(D, H).to(dtype=dtype, device=device or "cpu")
    with torch.no_grad():
        for name, value in to_torch(W, U, b).items():
            getattr(lstm, name).copy_(torch.as_tensor(value))
    return lstm


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


# --- counts -------------------------------------------------------------------------------

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


# --- the lecture's example ------------------------------------------------------------------

def lecture_example() -> dict[str, Any]:
    """The lecture's two-step example ("DNN computing on GPU", "LSTM - Example - Forward Path"), as arrays
    for ``lstm_forward``: ``x (2, 1, 2)``, ``h0 = c0 = 0 (1, 1)``, ``W (4, 2)``, ``U (4, 1)``,
    ``b (4,)``, labels ``y (2, 1, 1)``, learning rate ``lr``.

    The slide writes the second label as Y1 = -1.25 but computes with 0.77197 - 1.25, so the
    label its numbers follow is +1.25. The loss is ``E = sum_t (out_t - y_t)^2 / 2``, whose
    gradient at ``out_t`` is ``out_t - y_t``.
    """
    return {
        "x": np.array([[[1.0, 2.0]], [[0.5, 3.0]]]),
        "h0": np.zeros((1, 1)), "c0": np.zeros((1, 1)),
        "W": np.array([[0.45, 0.25], [0.95, 0.80], [0.70, 0.45], [0.60, 0.40]]),
        "U": np.array([[0.15], [0.80], [0.10], [0.25]]),
        "b": np.array([0.20, 0.65, 0.15, 0.10]),
        "y": np.array([[[0.5]], [[1.25]]]),
        "lr": 0.1,
    }


def lecture_printed() -> dict[str, np.ndarray]:
    """The numbers the lecture prints for its example, transcribed from the slides (rounded
    to 4-5 digits there, each step from the previous step's rounded values; agree with exact
    arithmetic to about 1e-4). Gate vectors are (a, i, f, o); ``delta_gates_t`` is the lecture's
    ``delta gates_t``; ``delta_out_prev_t`` its ``Delta out_{t-1}`` (the gradient passed to
    ``out_{t-1}``); ``new_W`` ... the weights after one step of gradient descent (lr 0.1)."""
    return {k: np.array(v) for k, v in {
        "gates_0": [0.81775, 0.96083, 0.85195, 0.81757],
        "state_0": 0.78572, "out_0": 0.53631,
        "gates_1": [0.84980, 0.98118, 0.87030, 0.84993],
        "state_1": 1.5176, "out_1": 0.77197,
        "Delta_1": -0.47803, "delta_state_1": -0.07111,
        "delta_gates_1": [-0.01938, -0.00112, -0.00631, -0.05538],
        "delta_x_1": [-0.04743, -0.03073], "delta_out_prev_1": -0.01828,
        "Delta_0": 0.03631, "delta_out_0": 0.01803, "delta_state_0": -0.05349,
        "delta_gates_0": [-0.01703, -0.00165, 0.0, 0.00176],
        "delta_x_0": [-0.00817, -0.00487], "delta_out_prev_0": -0.00343,
        "dW": [[-0.02672, -0.0922], [-0.00221, -0.00666], [-0.00316, -0.01893], [-0.02593, -0.16262]],
        "dU": [[-0.01039], [-0.00060], [-0.00338], [-0.02970]],
        "db": [-0.03641, -0.00277, -0.00631, -0.05362],
        "new_W": [[0.45267, 0.25922], [0.95022, 0.80067], [0.70031, 0.45189], [0.60259, 0.41626]],
        "new_U": [[0.15104], [0.80006], [0.10034], [0.25297]],
        "new_b": [0.20364, 0.65028, 0.15063, 0.10536],
    }.items()}


seed_example, seed_printed = lecture_example, lecture_printed     # their old names
