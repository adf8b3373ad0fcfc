"""INT8 quantization: calibrate a range, quantize, multiply in integers, dequantize.

TensorRT's first optimisation runs a trained FP32 model in INT8 without retraining. Symmetric
linear quantization maps a real range ``[-amax, amax]`` onto the integers ``[-127, 127]``:

    scale = amax / 127,    q = clamp(round(x / scale), -127, 127),    x ~ q * scale

(-128 is left out, so the range is symmetric and ``-q`` never overflows). ``amax`` comes from
*calibration* on sample data: the largest magnitude seen ("max"), or a high percentile of the
magnitudes, which clips rare outliers to keep resolution for everything else. One scale for a
whole tensor is *per-tensor*; one per output channel is *per-channel*: a weight matrix whose
rows differ a lot in magnitude (an *outlier channel*) quantizes every other row coarsely with a
per-tensor scale, and each row with its own resolution per channel.

A linear layer in INT8 keeps its sums exact: ``y = x W^T`` with ``x ~ s_x q_x`` (one scale) and
``W ~ s_w q_w`` (a scale per output channel, a row of W) is

    y[m, n] = s_x s_w[n] sum_k q_x[m, k] q_w[n, k]

whose sum of ``K`` products of two INT8 numbers (each up to 127 x 127 = 16129) needs INT32:
INT8 accumulation overflows after a few terms. Both scales factor out of the sum, so they are
applied once, after the integer GEMM; a scale per *input* channel k would not factor out.

Public names, in reading order:

``QMAX``                       127
``calibrate_max``, ``calibrate_percentile``   (reference) amax per tensor or per channel
``symmetric_scale``            (reference) amax / 127
``quantize``, ``dequantize``   (reference) to INT8 and back, per tensor or along a channel axis
``quantize_per_tensor``, ``quantize_per_channel``   (reference) calibrate, scale and quantize
``int8_matmul``                (reference) INT8 x INT8 -> INT32 (``torch._int_mm`` where it runs,
                               else NumPy in int32); ``exact_matmul`` in Python integers
``int8_linear``                (reference) a linear layer in INT8 with INT32 accumulation
``channel_errors``             relative quantization error of each channel
``Int8MLP``, ``quantize_mlp``, ``accuracy``   a small model's Linear layers run in INT8
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .references import reference

QMAX = 127


def _np(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _reduce_axes(ndim: int, axis: int | None) -> tuple[int, ...] | None:
    if axis is None:
        return None
    if not -ndim <= axis < ndim:
        raise ValueError(f"channel axis {axis} out of range for {ndim} dimensions")
    axis %= ndim
    return tuple(a for a in range(ndim) if a != axis)


def _per_channel(v: np.ndarray, ndim: int, axis: int | None) -> np.ndarray:
    """A per-channel vector shaped to broadcast along ``axis`` of an ``ndim``-array."""
    if axis is None:
        return v
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return np.reshape(v, shape)


@reference
def calibrate_max(x: Any, axis: int | None = None) -> Any:
    """The largest magnitude: one number (``axis`` None) or one per index of the channel
    ``axis`` (the maximum over all the other axes)."""
    a = np.abs(_np(x).astype(np.float64))
    out = a.max(axis=_reduce_axes(a.ndim, axis))
    return float(out) if axis is None else out


@reference
def calibrate_percentile(x: Any, percentile: float = 99.99, axis: int | None = None) -> Any:
    """The ``percentile`` (in percent, 0-100) of the magnitudes, per tensor or per channel:
    rarer outliers than ``100 - percentile`` percent are clipped."""
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile is in percent, (0, 100], got {percentile}")
    a = np.abs(_np(x).astype(np.float64))
    if axis is None:
        return float(np.percentile(a, percentile))
    moved = np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1)
    return np.percentile(moved, percentile, axis=1)


@reference
def symmetric_scale(amax: Any, qmax: int = QMAX) -> Any:
    """``amax / qmax``; a channel that is all zeros (amax 0) gets scale 1 (its values quantize to 0)."""
    a = np.asarray(amax, dtype=np.float64)
    if np.any(a < 0) or not np.all(np.isfinite(a)):
        raise ValueError(f"amax must be finite and >= 0, got {amax}")
    s = np.where(a > 0, a / qmax, 1.0)
    return float(s) if s.ndim == 0 else s


@reference
def quantize(x: Any, scale: Any, axis: int | None = None) -> np.ndarray:
    """``clamp(round(x / scale), -127, 127)`` as int8, rounding half to even (``np.rint``, like
    ``torch.round``). ``scale`` is one number, or a vector along the channel ``axis``."""
    x = _np(x).astype(np.float64)
    s = _per_channel(np.asarray(scale, dtype=np.float64), x.ndim, axis)
    return np.clip(np.rint(x / s), -QMAX, QMAX).astype(np.int8)


@reference
def dequantize(q: Any, scale: Any, axis: int | None = None) -> np.ndarray:
    """``q * scale`` in float32 (``scale`` per tensor or along ``axis``)."""
    q = _np(q)
    return (q.astype(np.float64) * _per_channel(np.asarray(scale, dtype=np.float64), q.ndim, axis)).astype(np.float32)


def _amax(x: Any, method: str, axis: int | None, percentile: float) -> Any:
    if method == "max":
        return calibrate_max(x, axis)
    if method == "percentile":
        return calibrate_percentile(x, percentile, axis)
    raise ValueError(f"method must be 'max' or 'percentile', got {method!r}")


@reference
def quantize_per_tensor(x: Any, method: str = "max", percentile: float = 99.99) -> tuple[np.ndarray, float]:
    """(int8 values, the one scale) of ``x``, calibrated on ``x`` itself."""
    scale = symmetric_scale(_amax(x, method, None, percentile))
    return quantize(x, scale), scale


@reference
def quantize_per_channel(x: Any, axis: int = 0, method: str = "max",
                         percentile: float = 99.99) -> tuple[np.ndarray, np.ndarray]:
    """(int8 values, a scale per index of ``axis``): for a weight (out, in) or (K, C, R, S), axis 0,
    the output channels, whose scales factor out of the GEMM."""
    scales = np.atleast_1d(symmetric_scale(_amax(x, method, axis, percentile)))
    return quantize(x, scales, axis), scales


# --- integer GEMM ----------------------------------------------------------------------------------


def _int_mm_torch(a: Any, b: Any) -> Any:
    """torch._int_mm where it runs (on CUDA: more than 16 rows, K and N multiples of 8), else
    None."""
    import torch

    if not hasattr(torch, "_int_mm"):
        return None
    m, k = a.shape
    n = b.shape[1]
    if a.is_cuda and not (m > 16 and k % 8 == 0 and n % 8 == 0):
        return None
    try:
        return torch._int_mm(a.contiguous(), b.contiguous())
    except RuntimeError:
        return None


@reference
def int8_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for int8 matrices, summed in int32: ``torch._int_mm`` for tensors (where it runs;
    exact float64 products otherwise, which are exact below 2^53), NumPy in int32 for arrays.
    The result is int32, of the input's kind."""
    if hasattr(a, "detach"):
        import torch

        if a.dtype != torch.int8 or b.dtype != torch.int8:
            raise TypeError(f"int8_matmul takes int8 tensors, got {a.dtype} and {b.dtype}")
        out = _int_mm_torch(a, b)
        if out is None:
            out = torch.round(a.double() @ b.double()).to(torch.int32)
        return out
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != np.int8 or b.dtype != np.int8:
        raise TypeError(f"int8_matmul takes int8 arrays, got {a.dtype} and {b.dtype}")
    return a.astype(np.int32) @ b.astype(np.int32)


def exact_matmul(a: Any, b: Any) -> list[list[int]]:
    """``a @ b`` in Python integers (no overflow, no rounding): the oracle for ``int8_matmul``."""
    a, b = _np(a).tolist(), _np(b).tolist()
    cols = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in cols] for row in a]


@reference
def int8_linear(q_x: Any, s_x: float, q_w: Any, s_w: Any, bias: Any = None) -> np.ndarray:
    """A linear layer ``x W^T + b`` computed in INT8: ``q_x`` (M, K) int8 with one scale ``s_x``,
    ``q_w`` (N, K) int8 with a scale per output channel ``s_w`` (N,) (or one); the INT32 sums
    are dequantized by ``s_x * s_w[n]`` and the float bias added. Returns float32 (M, N)."""
    acc = _np(int8_matmul(_np(q_x), np.ascontiguousarray(_np(q_w).T)))           # (M, N) int32
    y = acc.astype(np.float64) * float(s_x) * np.asarray(s_w, dtype=np.float64).reshape(1, -1)
    if bias is not None:
        y = y + _np(bias).astype(np.float64).reshape(1, -1)
    return y.astype(np.float32)


def channel_errors(w: Any, q: Any, scale: Any, axis: int = 0) -> np.ndarray:
    """Per channel along ``axis``: || dequantize(q) - w || / || w || (0 for an all-zero channel)."""
    w = _np(w).astype(np.float64)
    err = dequantize(q, scale, axis if np.ndim(scale) else None).astype(np.float64) - w
    red = _reduce_axes(w.ndim, axis)
    num, den = np.sqrt((err ** 2).sum(axis=red)), np.sqrt((w ** 2).sum(axis=red))
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


# --- a small model in INT8 -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Int8Layer:
    q_w: np.ndarray
    s_w: np.ndarray
    bias: np.ndarray | None
    s_x: float


class Int8MLP:
    """A ``nn.Sequential`` of Linear, BatchNorm1d (eval), ReLU (and Identity/Dropout) layers
    whose Linear layers run in INT8: activations quantized per tensor with a scale calibrated
    beforehand, weights per tensor or per output channel, sums in INT32. Other layers run in
    float32. Call it on a float array or tensor (batch, features); returns float32 logits."""

    def __init__(self, model: Any, calibration: Any, *, per_channel: bool, method: str = "max",
                 percentile: float = 99.99):
        import torch

        self.model, self.per_channel = model.eval(), per_channel
        self.layers: dict[int, _Int8Layer] = {}
        inputs: dict[int, list[np.ndarray]] = {}
        x = torch.as_tensor(_np(calibration), dtype=torch.float32)
        with torch.no_grad():
            for i, layer in enumerate(model):
                if isinstance(layer, torch.nn.Linear):
                    inputs[i] = _np(x)
                x = layer(x)
        for i, xin in inputs.items():
            lin = model[i]
            w = _np(lin.weight.detach()).astype(np.float64)
            q_w, s_w = quantize_per_channel(w, 0) if per_channel else quantize_per_tensor(w)
            self.layers[i] = _Int8Layer(q_w, np.broadcast_to(np.asarray(s_w, dtype=np.float64), (w.shape[0],)).copy(),
                                        None if lin.bias is None else _np(lin.bias.detach()).astype(np.float64),
                                        symmetric_scale(_amax(xin, method, None, percentile)))

    def __call__(self, x: Any) -> np.ndarray:
        import torch

        h = torch.as_tensor(_np(x), dtype=torch.float32)
        with torch.no_grad():
            for i, layer in enumerate(self.model):
                if i in self.layers:
                    L = self.layers[i]
                    h = torch.from_numpy(int8_linear(quantize(h, L.s_x), L.s_x, L.q_w, L.s_w, L.bias))
                else:
                    h = layer(h)
        return _np(h).astype(np.float32)


def quantize_mlp(model: Any, calibration: Any, *, per_channel: bool, method: str = "max",
                 percentile: float = 99.99) -> Int8MLP:
    """``Int8MLP(model, calibration, ...)``: calibrate the activations on ``calibration`` data."""
    return Int8MLP(model, calibration, per_channel=per_channel, method=method, percentile=percentile)


def accuracy(predict: Callable[[Any], Any], x: Any, labels: Any) -> float:
    """Fraction of rows of ``x`` whose largest logit is at the label."""
    logits = _np(predict(x))
    return float(np.mean(np.argmax(logits, axis=1) == _np(labels)))


__all__ = ["QMAX", "calibrate_max", "calibrate_percentile", "symmetric_scale", "quantize", "dequantize",
           "quantize_per_tensor", "quantize_per_channel", "int8_matmul", "exact_matmul", "int8_linear",
           "channel_errors", "Int8MLP", "quantize_mlp", "accuracy"]

