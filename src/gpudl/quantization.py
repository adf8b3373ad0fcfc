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

The layout decides the speed (Unit 05's strides). INT8 tensor cores read both operands K-major:
A's rows and B's *columns* contiguous along k. ``nn.Linear`` stores W (N, K) row-major, so
``B = W.T`` is column-major as a view, the layout they need; ``W.T.contiguous()`` is row-major B,
and cuBLASLt's INT8 kernels behind ``torch._int_mm`` then run several times slower than FP16 (the
trap ``gpudl bench inference`` shows next to the column-major rows). ``int8_matmul`` hands
``torch._int_mm`` a column-major B, copying B once when it is not.

Public names, in reading order:

``QMAX``                       127
``torch_amax``                 amax by torch (``torch.amax``, ``torch.quantile`` of the magnitudes),
                               per tensor or per channel, "max" or "percentile" calibration
``torch_quantize``             to INT8 by torch's ``fake_quantize_per_tensor_affine`` /
                               ``fake_quantize_per_channel_affine`` on [-127, 127]
``dequantize``                 back to float32, per tensor or along a channel axis
``column_major``               B (K, N) with its columns contiguous (K-major), copied only if need be
``int8_matmul``                (reference) INT8 x INT8 -> INT32 (``torch._int_mm`` where it runs,
                               B handed to it column-major, else NumPy in int32); ``exact_matmul``
                               in Python integers. The same GEMM in Triton, on INT8 tensor cores
                               with the scales and bias in its epilogue, is
                               ``gpudl.gemm.int8.int8_matmul_triton``
``channel_errors``             relative quantization error of each channel
``Int8MLP``, ``quantize_mlp``, ``accuracy``   a small model's Linear layers run in INT8

Lab 09 has you write calibration, quantization per tensor and per channel, and the INT8 linear
layer yourself; the tools here are torch's routines (which its checks set aside while your code
runs) and the INT32 GEMM.
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


def _scale_of(amax: Any) -> Any:
    """amax / 127, and 1 where amax is 0 (an all-zero channel quantizes to 0)."""
    a = np.asarray(amax, dtype=np.float64)
    s = np.where(a > 0, a / QMAX, 1.0)
    return float(s) if s.ndim == 0 else s


def torch_amax(x: Any, *, method: str = "max", percentile: float = 99.99, axis: int | None = None) -> Any:
    """The calibrated range of ``x`` by torch: ``torch.amax`` of ``|x|`` ("max") or
    ``torch.quantile`` of ``|x|`` at ``percentile`` percent ("percentile"); one number, or one per
    index of the channel ``axis`` (over all the other axes)."""
    import torch

    a = torch.from_numpy(np.abs(_np(x).astype(np.float64)))
    if axis is not None:
        red = _reduce_axes(a.ndim, axis)
        a = a.permute(axis % a.ndim, *red).reshape(a.shape[axis], -1)
    if method == "max":
        out = torch.amax(a) if axis is None else torch.amax(a, dim=1)
    elif method == "percentile":
        if not 0 < percentile <= 100:
            raise ValueError(f"percentile is in percent, (0, 100], got {percentile}")
        out = torch.quantile(a.reshape(-1), percentile / 100) if axis is None else \
            torch.quantile(a, percentile / 100, dim=1)
    else:
        raise ValueError(f"method must be 'max' or 'percentile', got {method!r}")
    return float(out) if axis is None else out.numpy()


def torch_quantize(x: Any, *, scale: Any, axis: int | None = None) -> np.ndarray:
    """``x`` as int8 on the symmetric range [-127, 127] with ``scale`` (one number, or a vector
    along the channel ``axis``), by torch's fake quantization (round half to even, clamp)."""
    import torch

    t = torch.from_numpy(_np(x).astype(np.float64))
    if axis is None:
        fq = torch.fake_quantize_per_tensor_affine(t, float(scale), 0, -QMAX, QMAX)
        s = float(scale)
    else:
        scales = torch.as_tensor(np.asarray(scale, dtype=np.float32).reshape(-1))     # torch takes float32 scales
        t = t.float()
        fq = torch.fake_quantize_per_channel_affine(t, scales, torch.zeros(scales.numel(), dtype=torch.int32),
                                                    axis % t.ndim, -QMAX, QMAX)
        s = _per_channel(scales.numpy(), t.ndim, axis)
    return np.rint(fq.numpy() / s).astype(np.int8)


def dequantize(q: Any, scale: Any, axis: int | None = None) -> np.ndarray:
    """``q * scale`` in float32 (``scale`` per tensor or along ``axis``)."""
    q = _np(q)
    return (q.astype(np.float64) * _per_channel(np.asarray(scale, dtype=np.float64), q.ndim, axis)).astype(np.float32)


# --- integer GEMM ----------------------------------------------------------------------------------


def column_major(b: Any) -> Any:
    """``b`` (K, N) with ``stride(0) == 1``: its columns contiguous, as INT8 tensor cores read B
    (K-major). The same tensor when it already is (``W.T`` of a row-major weight W), else a copy."""
    return b if b.stride(0) == 1 else b.t().contiguous().t()


def _int_mm_torch(a: Any, b: Any) -> Any:
    """torch._int_mm where it runs (on CUDA: more than 16 rows, K and N multiples of 8), else
    None. A is passed row-major and B column-major: both K-major, the layout cuBLASLt's INT8
    kernels take (a row-major B runs several times slower than FP16)."""
    import torch

    if not hasattr(torch, "_int_mm"):
        return None
    m, k = a.shape
    n = b.shape[1]
    if a.is_cuda and not (m > 16 and k % 8 == 0 and n % 8 == 0):
        return None
    try:
        return torch._int_mm(a.contiguous(), column_major(b))
    except RuntimeError:
        return None


@reference
def int8_matmul(a: Any, b: Any) -> Any:
    """``a @ b`` for int8 matrices, summed in int32: ``torch._int_mm`` for tensors (where it runs,
    with B column-major: ``column_major``; exact float64 products otherwise, which are exact below
    2^53), NumPy in int32 for arrays. The result is int32, of the input's kind."""
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
    beforehand, weights per tensor or per output channel (``torch_amax``, ``torch_quantize``),
    sums in INT32 (``int8_matmul``), then each output column scaled by ``s_x * s_w[n]`` and the
    float bias added. Other layers run in float32. Call it on a float array or tensor (batch,
    features); returns float32 logits."""

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
            axis = 0 if per_channel else None
            s_w = _scale_of(torch_amax(w, axis=axis))
            q_w = torch_quantize(w, scale=s_w, axis=axis)
            self.layers[i] = _Int8Layer(q_w, np.broadcast_to(np.asarray(s_w, dtype=np.float64), (w.shape[0],)).copy(),
                                        None if lin.bias is None else _np(lin.bias.detach()).astype(np.float64),
                                        _scale_of(torch_amax(xin, method=method, percentile=percentile)))

    def _linear(self, layer: _Int8Layer, h: Any) -> np.ndarray:
        sums = _np(int8_matmul(torch_quantize(h, scale=layer.s_x), layer.q_w.T))      # int32; W.T: B column-major
        y = dequantize(sums, layer.s_x * layer.s_w, axis=1).astype(np.float64)
        return (y if layer.bias is None else y + layer.bias).astype(np.float32)

    def __call__(self, x: Any) -> np.ndarray:
        import torch

        h = torch.as_tensor(_np(x), dtype=torch.float32)
        with torch.no_grad():
            for i, layer in enumerate(self.model):
                h = torch.from_numpy(self._linear(self.layers[i], h)) if i in self.layers else layer(h)
        return _np(h).astype(np.float32)


def quantize_mlp(model: Any, calibration: Any, *, per_channel: bool, method: str = "max",
                 percentile: float = 99.99) -> Int8MLP:
    """``Int8MLP(model, calibration, ...)``: calibrate the activations on ``calibration`` data."""
    return Int8MLP(model, calibration, per_channel=per_channel, method=method, percentile=percentile)


def accuracy(predict: Callable[[Any], Any], x: Any, labels: Any) -> float:
    """Fraction of rows of ``x`` whose largest logit is at the label."""
    logits = _np(predict(x))
    return float(np.mean(np.argmax(logits, axis=1) == _np(labels)))


__all__ = ["QMAX", "torch_amax", "torch_quantize", "dequantize", "column_major", "int8_matmul", "exact_matmul",
           "channel_errors", "Int8MLP", "quantize_mlp", "accuracy"]
