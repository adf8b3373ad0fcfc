"""The answers of lab01_performance_basics, in the lab's reading order.

1. ``peak_flops_from_units`` (the clock in MHz), and ``peak_from_units`` (in Hz): SMs x FMA per
   clock per SM x 2 x clock.
2. ``peak_from_spec``: a ``GPUSpec``'s peak derived from its units, tensor cores or not, sparse or
   not (what ``gpudl.hardware.PEAKS`` records for the GPUs of ``SPECS``; the tests check the two
   agree).
3. ``batch_latency``: a batch's results are out after ``batch / throughput``. (The 30 FPS
   question's answer is a digest in ``gpudl_instructor.checks.lab01``.)
4. ``conv2d_flops``; ``linear_flops``, ``linear_bytes``, ``arithmetic_intensity`` and
   ``linear_intensity``: FLOPs, bytes and intensity of layers.
5. ``bound_from_peaks`` (memory- or compute-bound from the two peaks), ``bound`` (with a spec's
   peaks), ``time_bounds`` (the least time of the math and of the traffic).
6. ``utilization``, ``limiter`` (the lecture's four quadrants).
7. ``roof`` (the roofline from the two peaks: lab01's ``attainable``), ``attainable_flops`` (with
   a spec's peaks). The course's ``gpudl.roofline.roofline_plot`` draws a real GPU's roofline.
8. ``energy_ratio``: a DRAM fetch over an on-chip SRAM fetch (the lecture's Timeloop figures).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gpudl import hardware
from gpudl.hardware import GPUSpec, bytes_per_element, get_spec, normalize_dtype
from gpudl.references import reference
from gpudl.roofline import _positive_ints   # the course edition's input validation, shared


# --- 1. peak FLOP/s from units and clock -----------------------------------------------------

@reference
def peak_from_units(sms: int, fma_per_clock_per_sm: float, clock_hz: float) -> float:
    """SMs x FMA per clock per SM x 2 FLOP per FMA x clock: a V100's tensor cores,
    80 x 512 x 2 x 1.53 GHz = 125.3 TFLOP/s."""
    return sms * fma_per_clock_per_sm * 2 * clock_hz


@reference
def peak_flops_from_units(sms: int, fma_per_clock_per_sm: float, clock_mhz: float) -> float:
    """The exercise's form: the clock in MHz."""
    return peak_from_units(sms, fma_per_clock_per_sm, clock_mhz * 1e6)


# --- 2. the peak of a GPUSpec ---------------------------------------------------------------

@reference
def peak_from_spec(spec_or_name: GPUSpec | str, dtype: Any = "fp32", tensor_cores: bool = True, *,
                   sparse: bool = False) -> float:
    """Peak FLOP/s (OP/s for integer dtypes) of any ``GPUSpec``, derived from its units.

    ``tensor_cores=True`` uses the tensor-core rate when the GPU has one for ``dtype`` and the
    CUDA-core rate otherwise (FP32 proper never runs on tensor cores: TF32 does), at the clock
    ``spec.clock_hz`` says the peak is quoted at. ``sparse=True`` doubles a tensor-core rate on
    GPUs with 2:4 structured sparsity.
    """
    spec = get_spec(spec_or_name)
    dt = normalize_dtype(dtype)
    use_tensor = tensor_cores and dt in spec.tensor_fma_per_sm
    if sparse:
        if not use_tensor:
            raise ValueError(f"sparse=True needs tensor cores that run {dt} on the {spec.name}")
        if not spec.sparsity:
            raise ValueError(f"the {spec.name} ({spec.architecture}) has no 2:4 structured sparsity")
    if use_tensor:
        fma = spec.tensor_fma_per_sm[dt]
    elif dt in spec.cuda_fma_per_sm:
        fma = spec.cuda_fma_per_sm[dt]
    elif dt == "tf32":
        raise ValueError(f"TF32 is a tensor-core mode; the {spec.name} has no TF32 tensor cores"
                         if tensor_cores else "TF32 exists only on tensor cores: pass tensor_cores=True")
    else:
        where = "tensor cores or CUDA cores" if tensor_cores else "CUDA cores"
        raise ValueError(f"the {spec.name} has no {where} rate for {dt}")
    return peak_from_units(spec.sms, fma, spec.clock_hz(tensor=use_tensor, dtype=dt)) * (2 if sparse else 1)


# --- 3. latency and throughput ---------------------------------------------------------------

@reference
def batch_latency(throughput_fps: float, batch: int) -> float:
    """Seconds until a batch's results are out, for a system delivering ``throughput_fps`` frames/s."""
    return batch / throughput_fps


# --- 4. FLOPs, bytes and intensity of layers -------------------------------------------------

def _conv_shapes(in_shape, out_shape, kernel_size, groups):
    n, c, _, _ = _positive_ints("in_shape (N, C, H, W)", in_shape, 4)
    n2, k, p, q = _positive_ints("out_shape (N, K, P, Q)", out_shape, 4)
    r, s = _positive_ints("kernel_size (R, S)", kernel_size if not isinstance(kernel_size, int)
                          else (kernel_size, kernel_size), 2)
    if n != n2:
        raise ValueError(f"batch sizes differ: input N={n}, output N={n2}")
    if groups <= 0 or c % groups or k % groups:
        raise ValueError(f"groups={groups} must divide both input channels C={c} and output channels K={k}")
    return n, c, k, p, q, r, s


@reference
def conv2d_flops(in_shape, out_shape, kernel_size, *, bias: bool = False, groups: int = 1) -> int:
    """FLOPs of a 2-D convolution from (N, C, H, W) to (N, K, P, Q) with an R x S filter.

    Each output element takes ``R x S x C / groups`` multiply-adds, plus one for the bias.
    The lecture's example, a 3x3 conv with bias from 1x3x416x480 to 1x16x208x240:

    >>> conv2d_flops((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True)
    44728320
    """
    n, c, k, p, q, r, s = _conv_shapes(in_shape, out_shape, kernel_size, groups)
    macs_per_output = r * s * (c // groups) + (1 if bias else 0)
    return 2 * macs_per_output * n * k * p * q


@reference
def linear_flops(batch: int, in_features: int, out_features: int, *, bias: bool = False) -> int:
    """FLOPs of ``y = x W^T (+ b)`` for ``x`` of shape (batch, in_features)."""
    b, i, o = _positive_ints("(batch, in_features, out_features)", (batch, in_features, out_features))
    return 2 * b * i * o + (b * o if bias else 0)


@reference
def linear_bytes(batch: int, in_features: int, out_features: int, dtype: Any = "fp16",
                 *, bias: bool = False) -> int:
    """Bytes moved: input (batch x in), weights (in x out, + out for the bias), output (batch x out)."""
    b, i, o = _positive_ints("(batch, in_features, out_features)", (batch, in_features, out_features))
    elements = b * i + i * o + (o if bias else 0) + b * o
    return int(elements * bytes_per_element(dtype))


@reference
def arithmetic_intensity(flops: float, nbytes: float) -> float:
    """FLOPs per byte moved. ``arithmetic_intensity(32, 17)`` is the lecture's 1.88."""
    if nbytes <= 0:
        raise ValueError(f"bytes moved must be positive, got {nbytes}")
    if flops < 0:
        raise ValueError(f"FLOPs must be non-negative, got {flops}")
    return flops / nbytes


_DTYPE_OF_BYTES = {1: "int8", 2: "fp16", 4: "fp32", 8: "fp64"}


@reference
def linear_intensity(batch: int, in_features: int, out_features: int, bytes_per_element: int) -> float:
    """The exercise's form: a linear layer's FLOPs per byte, elements of ``bytes_per_element`` bytes."""
    dtype = _DTYPE_OF_BYTES[int(bytes_per_element)]
    return arithmetic_intensity(linear_flops(batch, in_features, out_features),
                                linear_bytes(batch, in_features, out_features, dtype))


# --- 5. memory- or compute-bound --------------------------------------------------------------

@reference
def bound_from_peaks(flops: float, nbytes: float, peak: float, bandwidth: float) -> str:
    """"memory" if the intensity is below the ridge point ``peak / bandwidth``, else "compute"."""
    return "memory" if arithmetic_intensity(flops, nbytes) < peak / bandwidth else "compute"


@reference
def bound(flops: float, nbytes: float, spec: GPUSpec | str, dtype: Any = "fp16", *,
          tensor_cores: bool = True) -> str:
    """``bound_from_peaks`` with the peaks of ``spec``.

    For a V100 in FP16 (ridge ~139 FLOP/B) a 1024 -> 4096 linear layer is compute-bound at
    batch 512 (~315 FLOP/B) and memory-bound at batch 1 (~1 FLOP/B).
    """
    return bound_from_peaks(flops, nbytes, peak_from_spec(spec, dtype, tensor_cores=tensor_cores),
                            hardware.peak_bandwidth(spec))


@reference
def time_bounds(flops: float, nbytes: float, spec: GPUSpec | str, dtype: Any = "fp16", *,
                tensor_cores: bool = True) -> tuple[float, float]:
    """Best-case seconds for the math and for the memory traffic; the op needs at least the larger.

    (The lecture's worked example writes 44.8 *ns* and 5.6 *ns* for its 1 TOPS / 1000 GB/s
    device; the numbers are 44.7 *us* and 5.6 *us*: 44,728,320 / 1e12 s = 4.47e-5 s.)
    """
    return (flops / peak_from_spec(spec, dtype, tensor_cores=tensor_cores), nbytes / hardware.peak_bandwidth(spec))


# --- 6. utilization and the four quadrants ----------------------------------------------------

@reference
def utilization(achieved: float, peak: float) -> float:
    """Achieved over peak, as a fraction (200 GB/s of 1 TB/s is 0.2)."""
    if peak <= 0:
        raise ValueError(f"peak must be positive, got {peak}")
    if achieved < 0:
        raise ValueError(f"achieved must be non-negative, got {achieved}")
    return achieved / peak


@reference
def limiter(math_utilization: float, memory_utilization: float, threshold: float = 0.7) -> str:
    """The lecture's four quadrants: "math", "memory", "both" (top right, optimal) or "latency"
    (neither unit busy: too little parallel work, launch overhead, dependencies)."""
    busy_math, busy_memory = math_utilization >= threshold, memory_utilization >= threshold
    if busy_math and busy_memory:
        return "both"
    if busy_math:
        return "math"
    if busy_memory:
        return "memory"
    return "latency"


# --- 7. the roofline ---------------------------------------------------------------------------

@reference
def roof(intensity: Any, peak: float, bandwidth: float) -> Any:
    """The roofline from the two peaks: ``min(peak FLOP/s, intensity x bandwidth)``,
    elementwise for an array of intensities."""
    return np.minimum(peak, np.asarray(intensity, dtype=float) * bandwidth)


@reference
def attainable_flops(intensity: float, spec: GPUSpec | str, dtype: Any = "fp16", *,
                     tensor_cores: bool = True) -> float:
    """The roofline of ``spec``: ``min(peak FLOP/s, intensity x bandwidth)``."""
    return float(roof(intensity, peak_from_spec(spec, dtype, tensor_cores=tensor_cores),
                      hardware.peak_bandwidth(spec)))


# --- 8. the energy of moving data ----------------------------------------------------------------

@reference
def energy_ratio() -> float:
    """How many times more energy fetching two 8-bit operands from DRAM costs than from a large SRAM."""
    e = hardware.ENERGY_PJ
    return e["fetch_two_int8_from_dram"] / e["fetch_two_int8_from_large_sram"]
