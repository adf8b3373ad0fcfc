"""The LSTM's conventions, the lecture's worked example, and torch.nn.LSTM holding our weights.

The lecture's notation ("LSTM - Example"): the four gates are stacked in the order
``(a, i, f, o)``: ``a`` the input activation (torch and cuDNN call it ``g``), ``i`` the input
gate, ``f`` the forget gate, ``o`` the output gate. For a batch of ``N`` sequences of ``T``
steps, time-major like ``torch.nn.LSTM``::

    x (T, N, D)   h0, c0 (N, H)   W (4H, D)   U (4H, H)   b (4H,)

    z_t   = x_t W^T + h_{t-1} U^T + b               (N, 4H)  one product per input, 4 gates fused
    a_t   = tanh(z_a)   i_t = s(z_i)   f_t = s(z_f)   o_t = s(z_o)      (s: the sigmoid)
    c_t   = a_t * i_t + f_t * c_{t-1}                (the lecture's state_t)
    h_t   = o_t * tanh(c_t)                          (the lecture's out_t)

Lab 06 has students write the step, its backward, backpropagation through time and the rest;
none of it is here. What the course offers instead is an independent oracle: ``torch.nn.LSTM``
(cuDNN's fused RNN on a GPU) computes the same function once it holds our weights in its own
(i, f, g, o) order, and its autograd gives every gradient.

Public names, in order:

``GATES``, ``TORCH_GATE_ORDER``, ``sigmoid``
``torch_lstm``                  a ``torch.nn.LSTM(D, H)`` holding our ``W, U, b``
``torch_lstm_call``             torch.nn.LSTM's forward on our parameters as tensors, differentiable
                                in all of them (their gradients come back in our order)
``lecture_example``, ``lecture_printed``   the lecture's two-step example: its inputs, and the numbers it
                                prints (``seed_example``, ``seed_printed``: the same, by their old names)

``gpudl bench lstm`` is ``gpudl.benchmarks.lstm``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

GATES = ("a", "i", "f", "o")          # the lecture's order of the four blocks of rows of W, U, b
TORCH_GATE_ORDER = ("i", "f", "a", "o")   # torch.nn.LSTM / cuDNN: (i, f, g, o), with g = our a


def sigmoid(z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The logistic function as ``(1 + tanh(z / 2)) / 2``: no overflow for any ``z``.

    With ``out`` (may be ``z`` itself) it works in place, allocating nothing.
    """
    out = np.multiply(z, 0.5, out=out)
    np.tanh(out, out=out)
    out += 1.0
    out *= 0.5
    return out


# --- torch.nn.LSTM ---------------------------------------------------------------------------
# Lab 06's checks forbid these (and torch.nn.LSTM) wherever they would stand in for an answer.

def _torch_rows(H: int) -> np.ndarray:
    """Row indices into our (a, i, f, o) stacking that give torch's (i, f, g, o) stacking."""
    return np.concatenate([np.arange(GATES.index(g) * H, (GATES.index(g) + 1) * H) for g in TORCH_GATE_ORDER])


def torch_lstm(W, U, b, *, dtype: Any = None, device: str | None = None):
    """A ``torch.nn.LSTM(D, H)`` holding our ``W, U, b`` (NumPy or torch, our (a, i, f, o)
    order): its parameters are theirs in torch's (i, f, g, o) order, ``bias_hh_l0`` zero.
    ``dtype``: torch's, default float64 for float64 weights, else float32."""
    import torch

    W, U, b = (np.asarray(v.detach().cpu() if hasattr(v, "detach") else v) for v in (W, U, b))
    D, H = W.shape[1], U.shape[1]
    if W.shape != (4 * H, D) or U.shape != (4 * H, H) or b.shape != (4 * H,):
        raise ValueError(f"expected W (4H, D), U (4H, H), b (4H,), got {W.shape}, {U.shape}, {b.shape}")
    if dtype is None:
        dtype = torch.float64 if W.dtype == np.float64 else torch.float32
    module = torch.nn.LSTM(D, H).to(dtype=dtype, device=device or "cpu")
    rows = _torch_rows(H)
    with torch.no_grad():
        for name, value in (("weight_ih_l0", W[rows]), ("weight_hh_l0", U[rows]), ("bias_ih_l0", b[rows]),
                            ("bias_hh_l0", np.zeros_like(b))):
            getattr(module, name).copy_(torch.as_tensor(np.ascontiguousarray(value)))
    return module


def torch_lstm_call(x, h0, c0, W, U, b):
    """``out (T, N, H), (h_T, c_T)``: ``torch.nn.LSTM``'s forward with our parameters.

    All six are torch tensors of one dtype and device, ``W, U, b`` in our (a, i, f, o) order;
    any of them may require grad: ``backward()`` then gives ``W.grad``, ``U.grad``, ``b.grad``
    in our order, and the gradients at ``x``, ``h0``, ``c0``. (The module's parameters are
    replaced by ``W, U, b`` in torch's order for the call: ``torch.func.functional_call``.)
    """
    import torch

    D, H = W.shape[1], U.shape[1]
    module = torch.nn.LSTM(D, H, device="meta")
    rows = torch.as_tensor(_torch_rows(H), device=W.device)
    params = {"weight_ih_l0": W[rows], "weight_hh_l0": U[rows], "bias_ih_l0": b[rows],
              "bias_hh_l0": torch.zeros_like(b)}
    out, (h_n, c_n) = torch.func.functional_call(module, params, (x, (h0[None], c0[None])))
    return out, (h_n[0], c_n[0])


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
