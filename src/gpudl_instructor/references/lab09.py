"""The references of lab09_profiling_and_inference, in the lab's reading order.

1. ``kernel_summary``                    kernel events -> ``KernelRow``s, Nsight Systems' gpukernsum: one row
                                         per kernel name, by decreasing total time, shares of all kernel time
2. (the lecture's table: a question, judged by its digest in ``gpudl_instructor.checks.lab09``)
3. ``chain_bytes``                       (unfused, fused) DRAM bytes of bias + GELU + residual
4. ``roofline_time``, ``predicted_speedup``   a kernel's roofline time; the chain's over the fused kernel's
5. ``fold_conv_bn``                      batch norm (eval) folded into the convolution's weight and bias
6. ``calibrate_max``, ``calibrate_percentile``   amax from the largest magnitude or a percentile of them
7. ``symmetric_scale``, ``quantize``, ``quantize_per_tensor``   amax / 127; clamp(rint(x / scale), -127, 127)
8. ``quantize_per_channel``              one scale per index of the channel axis
9. ``int8_linear``                       x W^T + b from INT8 operands, INT32 sums, the scales after
10. ``tune``                             the auto-tuner's loop: warm up, time, median, keep the fastest, cache
11. ``largest_batch_within``             the largest batch whose latency meets a budget

These were ``gpudl.profiling``, ``gpudl.fusion``, ``gpudl.quantization``, ``gpudl.tuning`` and the
lab's grading module before the course edition lost its answers. What stayed there is imported
from it: the trace's rows (``KernelRow``), the roofline's ops (``roofline.Op``), the INT8 GEMM
(``quantization.int8_matmul``), the 30 FPS budget.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from gpudl import roofline
from gpudl.profiling import KernelRow, _kernels, _row
from gpudl.quantization import QMAX, _np, _per_channel, _reduce_axes, int8_matmul
from gpudl.references import reference
from gpudl.tuning import LATENCY_BUDGET_30FPS

__all__ = ["kernel_summary", "chain_bytes", "roofline_time", "predicted_speedup", "fold_conv_bn", "calibrate_max",
           "calibrate_percentile", "symmetric_scale", "quantize", "quantize_per_tensor", "quantize_per_channel",
           "int8_linear", "tune", "largest_batch_within"]


# --- 1. the kernel summary -----------------------------------------------------------------------

@reference
def kernel_summary(events: Iterable[Mapping[str, Any]], top: int | None = None) -> list[KernelRow]:
    """``nsys stats --report gpukernsum``: one row per kernel *name*, by decreasing total time.

    Each row's statistics are over that name's instances only; ``time_pct`` is its total over
    the total of *all* kernels' time (GPU time, not the wall-clock span of the trace, which
    also holds idle gaps). ``top`` keeps the first ``top`` rows (their shares stay shares of
    the whole)."""
    kernels = _kernels(events)
    by_name: dict[str, list[float]] = {}
    for e in kernels:
        by_name.setdefault(str(e["name"]), []).append(float(e["duration_ns"]))
    grand = sum(sum(d) for d in by_name.values())
    rows = sorted((_row(name, d, grand) for name, d in by_name.items()), key=lambda r: (-r.total_ns, r.name))
    return rows if top is None else rows[:top]


# --- 3. and 4. fusion: bytes and the roofline's prediction ---------------------------------------

@reference
def chain_bytes(rows: int, cols: int, bytes_per_el: float) -> tuple[float, float]:
    """(unfused, fused) DRAM bytes of bias + GELU + residual on (rows, cols) elements of
    ``bytes_per_el`` bytes: ``(7 R C + C) s`` and ``(3 R C + C) s``."""
    n = rows * cols
    return ((7 * n + cols) * bytes_per_el, (3 * n + cols) * bytes_per_el)


@reference
def roofline_time(flops: float, nbytes: float, peak: float, bandwidth: float) -> float:
    """The roofline's least time for one kernel: its math and its traffic overlap, so the
    larger of ``flops / peak`` and ``nbytes / bandwidth``."""
    if peak <= 0 or bandwidth <= 0:
        raise ValueError(f"peak and bandwidth must be positive, got {peak}, {bandwidth}")
    return max(flops / peak, nbytes / bandwidth)


def _flops_bytes(op: Any) -> tuple[float, float]:
    if isinstance(op, roofline.Op):
        return op.flops, op.bytes
    flops, nbytes = op
    return float(flops), float(nbytes)


@reference
def predicted_speedup(ops: Sequence[Any], fused: Any, peak: float, bandwidth: float) -> float:
    """How much faster the roofline says one fused kernel is than the chain ``ops`` run one
    kernel after another: sum of the kernels' roofline times over the fused kernel's. Ops are
    ``roofline.Op`` or (flops, bytes) pairs."""
    unfused = sum(roofline_time(*_flops_bytes(op), peak, bandwidth) for op in ops)
    return unfused / roofline_time(*_flops_bytes(fused), peak, bandwidth)


# --- 5. conv + batch norm folding ------------------------------------------------------------------

@reference
def fold_conv_bn(weight: Any, bias: Any, mean: Any, var: Any, gamma: Any, beta: Any, eps: float = 1e-5) -> tuple[Any, Any]:
    """Fold an eval-mode batch norm into the convolution before it.

    BN computes ``gamma (z - mean) / sqrt(var + eps) + beta`` per output channel k of
    ``z = conv(x, W) + b``. With ``s_k = gamma_k / sqrt(var_k + eps)`` that is a convolution
    with ``W'[k] = s_k W[k]`` and ``b'_k = s_k (b_k - mean_k) + beta_k``: the same output, one
    kernel instead of two, and the BN's read and write of the activation gone. ``weight`` is
    (K, C, R, S) (or any (K, ...)); ``bias`` (K,) or None; the BN tensors (K,)."""
    import torch

    if bias is None:
        bias = torch.zeros_like(mean)
    scale = gamma / torch.sqrt(var + eps)                                      # (K,)
    w = weight * scale.reshape(-1, *([1] * (weight.ndim - 1)))                 # (K, C, R, S)
    return w, (bias - mean) * scale + beta


# --- 6.-9. INT8 --------------------------------------------------------------------------------------

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


@reference
def int8_linear(q_x: Any, s_x: float, q_w: Any, s_w: Any, bias: Any = None) -> np.ndarray:
    """A linear layer ``x W^T + b`` computed in INT8: ``q_x`` (M, K) int8 with one scale ``s_x``,
    ``q_w`` (N, K) int8 with a scale per output channel ``s_w`` (N,) (or one); the INT32 sums
    are dequantized by ``s_x * s_w[n]`` and the float bias added. Returns float32 (M, N).

    On a GPU the layer is one launch of the course's Triton INT8 GEMM: INT32 sums on the INT8
    tensor cores, with ``q_w.T`` (column-major: K-major, as they read it), the scales and the bias
    applied in its epilogue in FP32."""
    if _compiled_gpu():
        return _int8_linear_gpu(q_x, s_x, q_w, s_w, bias)
    acc = _np(int8_matmul(_np(q_x), _np(q_w).T))                                  # (M, N) int32
    y = acc.astype(np.float64) * float(s_x) * np.asarray(s_w, dtype=np.float64).reshape(1, -1)
    if bias is not None:
        y = y + _np(bias).astype(np.float64).reshape(1, -1)
    return y.astype(np.float32)


def _compiled_gpu() -> bool:
    import torch

    from gpudl._launch import interpreting

    return torch.cuda.is_available() and not interpreting()


def _int8_linear_gpu(q_x: Any, s_x: float, q_w: Any, s_w: Any, bias: Any) -> np.ndarray:
    import torch

    from gpudl.gemm.int8 import int8_matmul_triton

    x = torch.as_tensor(np.ascontiguousarray(_np(q_x))).cuda()                   # (M, K) int8
    w = torch.as_tensor(np.ascontiguousarray(_np(q_w))).cuda()                   # (N, K) int8, row-major
    scales = np.asarray(s_w, dtype=np.float64).reshape(-1)
    y = int8_matmul_triton(x, w.T, scale_a=float(s_x), scale_b=torch.as_tensor(scales, dtype=torch.float32),
                           bias=None if bias is None else torch.as_tensor(_np(bias).astype(np.float32).reshape(-1)))
    return y.cpu().numpy()


# --- 10. the tuner ---------------------------------------------------------------------------------

@reference
def tune(key: Any, candidates: Sequence[str], run: Callable, clock: Callable, cache: dict, warmup: int = 2,
         repeats: int = 3) -> str:
    """The fastest candidate for ``key`` by the median of ``repeats`` runs after ``warmup``; cached
    per key (a cached key runs nothing)."""
    if key in cache:
        return cache[key]
    medians = {}
    for c in candidates:
        for _ in range(warmup):
            run(c)
        times = []
        for _ in range(repeats):
            t0 = clock()
            run(c)
            times.append(clock() - t0)
        medians[c] = float(np.median(times))
    cache[key] = min(candidates, key=lambda c: medians[c])
    return cache[key]


# --- 11. batching -------------------------------------------------------------------------------

@reference
def largest_batch_within(batches: Sequence[int], latencies_s: Sequence[float],
                         budget_s: float = LATENCY_BUDGET_30FPS) -> int | None:
    """The largest batch size whose measured latency (time for the whole batch) is at most
    ``budget_s``; None when even the smallest misses it. A batch's frames all wait for the batch:
    the budget bounds latency(B), not latency(B) / B, which is 1 / throughput."""
    if len(batches) != len(latencies_s):
        raise ValueError(f"{len(batches)} batch sizes but {len(latencies_s)} latencies")
    fitting = [int(b) for b, t in zip(batches, latencies_s) if t <= budget_s]
    return max(fitting) if fitting else None
