"""The answers of lab02_matmul_flops (measuring matmul FLOP/s), in the lab's reading order.

1. ``gemm_flops``: the FLOPs of C = A @ B, 2mnk.
2. and 3. The timers have no reference here: the checks time the same work with the course's
   own timers (``gpudl.timing.time_cpu``, ``time_cuda``), which the exercises forbid.
4. ``matmul_tflops``: the package's version of the measurement the lab asks for (m, n, k, TF32
   set exactly as asked and restored, gpudl's timer, a figure above peak refused), returning a
   ``MatmulResult``; the lab's exercise takes the timer and the matmul as arguments instead and
   returns TFLOP/s.
5. ``matmul_sweep``: it over sizes and dtypes, with a progress bar silent while grading.
7. ``fraction_of_peak``: a figure's fraction of a GPU's dense peak; ValueError above peak.
8. ``gemm_waves`` (with ``Waves``), ``gemm_regime`` and the exercise's square form ``regime``:
   launch overhead, too few tiles for the SMs, a partly empty last wave, or compute.

The course edition keeps what these are measured with: ``gpudl.timing``, TF32's switch
(``gpudl.bench.allow_tf32``), the storage dtypes (``gpudl.bench.torch_dtype``) and the simulated
GPU (``gpudl.bench.SimulatedGPU``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from gpudl import hardware
from gpudl.bench import MATMUL_DTYPES, SimulatedGPU, allow_tf32, torch_dtype
from gpudl.references import reference
from gpudl.timing import Measurement, _fmt_time, check_plausible, measure

__all__ = ["gemm_flops", "MatmulResult", "matmul_tflops", "matmul_sweep", "fraction_of_peak", "Waves",
           "gemm_waves", "REGIMES", "gemm_regime", "regime"]


# --- 1. counting -----------------------------------------------------------------------------

@reference
def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of C = A @ B with A (m, k) and B (k, n): each of the m*n outputs sums k
    products, one multiply-add (2 FLOPs) each, so 2mnk.

    >>> gemm_flops(2000, 2000, 2000) / 1e9   # the lecture's "2*2*2*2" GFLOP
    16.0
    """
    for name, v in (("m", m), ("n", n), ("k", k)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return 2 * int(m) * int(n) * int(k)


# --- 4. and 5. one matmul, and a sweep -------------------------------------------------------

@dataclass(frozen=True)
class MatmulResult:
    """One timed C = A @ B: the measurement, and what it means in FLOP/s.

    ``dtype`` is what was asked for; ``mode`` what the math ran as ("tf32" for FP32 data
    with TF32 allowed). ``peak_flops`` is the device's peak for ``mode`` (None on a CPU:
    gpudl has no CPU specs).
    """

    m: int
    n: int
    k: int
    dtype: str
    mode: str
    device: str
    measurement: Measurement
    peak_flops: float | None = None

    def __post_init__(self) -> None:
        for name in ("m", "n", "k"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.dtype not in MATMUL_DTYPES or self.mode not in MATMUL_DTYPES:
            raise ValueError(f"dtype and mode must be among {MATMUL_DTYPES}, got {self.dtype!r}, {self.mode!r}")
        if self.peak_flops is not None and not self.peak_flops > 0:
            raise ValueError(f"peak_flops must be positive or None, got {self.peak_flops}")

    @property
    def flops(self) -> int:
        return gemm_flops(self.m, self.n, self.k)

    @property
    def seconds(self) -> float:
        return self.measurement.median

    @property
    def tflops(self) -> float:
        return self.flops / self.seconds / 1e12

    @property
    def fraction_of_peak(self) -> float | None:
        return None if self.peak_flops is None else self.flops / self.seconds / self.peak_flops

    def __str__(self) -> str:
        frac = "" if self.fraction_of_peak is None else f", {self.fraction_of_peak:.0%} of peak"
        return (f"{self.m}x{self.n}x{self.k} {self.mode} on {self.device}: {_fmt_time(self.seconds)}, "
                f"{self.tflops:.3g} TFLOP/s{frac}")


def _peak_for(device: Any, mode: str) -> float | None:
    if isinstance(device, SimulatedGPU):
        return device.peak_flops(mode)
    if isinstance(device, str) and device.startswith("cuda"):
        spec = hardware.detect()
        try:
            return hardware.peak_flops(spec, mode) if spec is not None else None
        except ValueError:
            return None
    return None


@reference
def matmul_tflops(m: int, n: int | None = None, k: int | None = None, dtype: Any = "fp32", device: Any = None, *,
                  tf32: bool | None = None, check: bool = True, seed: int = 0, **timer_kwargs: Any) -> MatmulResult:
    """Time ``A @ B`` (A: m x k, B: k x n, random normal) with gpudl's timer on ``device``.

    ``dtype`` is "fp32", "tf32" (FP32 data, TF32 math), "fp16", "bf16" or "fp64". TF32 is set
    exactly as asked: ``tf32=None`` means "only for dtype 'tf32'"; the previous setting is
    restored afterwards. ``device`` is "cpu", "cuda" or a ``SimulatedGPU`` (default: gpudl's
    device). With ``check``, a figure above the device's peak raises
    ``ImplausibleMeasurementError``. Extra keywords go to the timer (``measure``).
    """
    import torch

    n = m if n is None else n
    k = m if k is None else k
    dt = hardware.normalize_dtype(dtype)
    storage = torch_dtype(dt)
    if tf32 is None:
        tf32 = dt == "tf32"
    elif dt == "tf32" and not tf32:
        raise ValueError("dtype 'tf32' with tf32=False is a contradiction: ask for 'fp32' instead")
    mode = "tf32" if storage == torch.float32 and tf32 else dt
    sim = device if isinstance(device, SimulatedGPU) else None
    device = device if sim is not None else (device or hardware.device())
    where = "cpu" if sim is not None else device
    g = torch.Generator(device=where).manual_seed(seed)
    a = torch.randn(m, k, generator=g, device=where, dtype=torch.float32).to(storage)   # (m, k)
    b = torch.randn(k, n, generator=g, device=where, dtype=torch.float32).to(storage)   # (k, n)
    matmul = sim.matmul if sim is not None else torch.matmul
    what = f"{m}x{n}x{k} matmul, {mode}"
    with allow_tf32(tf32):
        meas = measure(lambda: matmul(a, b), device, what=what, **timer_kwargs)
    label = sim.name if sim is not None else device
    result = MatmulResult(m, n, k, dt, mode, label, meas, _peak_for(device, mode))
    if check and result.peak_flops is not None:
        check_plausible(result.flops / result.seconds, result.peak_flops, what=what)
    return result


@reference
def matmul_sweep(sizes: Sequence[int], dtypes: Sequence[Any] = ("fp32",), device: Any = None, *,
                 progress: bool = True, **kwargs: Any) -> list[MatmulResult]:
    """``matmul_tflops`` for square matmuls of each size and dtype, with a tqdm progress bar
    (silent while nbgrader grades: a test cell that writes to stderr scores 0)."""
    from tqdm.auto import tqdm

    from gpudl.grading import grading_active

    jobs = [(dt, int(n)) for dt in dtypes for n in sizes]
    results = []
    with tqdm(total=len(jobs), desc="matmul sweep", disable=not progress or grading_active(), leave=False) as bar:
        for dt, n in jobs:
            bar.set_postfix_str(f"{dt} n={n}")
            results.append(matmul_tflops(n, n, n, dt, device, **kwargs))
            bar.update()
    return results


# --- 7. fraction of peak ---------------------------------------------------------------------

@reference
def fraction_of_peak(tflops: float, spec: Any, dtype: Any) -> float:
    """The fraction of ``spec``'s dense peak for ``dtype`` that ``tflops`` TFLOP/s reach;
    ValueError for a figure above peak (a broken measurement, never a fast kernel)."""
    fraction = tflops * 1e12 / hardware.peak_flops(spec, dtype)
    if fraction > 1:
        raise ValueError(f"{tflops:.4g} TFLOP/s is {fraction:.3g}x the {hardware.get_spec(spec).name}'s {dtype} "
                         "peak: the measurement is broken")
    return fraction


# --- 8. why small matmuls are far from peak --------------------------------------------------

@dataclass(frozen=True)
class Waves:
    """How the output tiles of a GEMM fill the SMs: ``tiles`` thread blocks run ``waves``
    rounds on ``sms`` SMs; ``efficiency`` is the fraction of SM-rounds doing work."""

    tiles: int
    sms: int
    waves: int

    def __post_init__(self) -> None:
        if min(self.tiles, self.sms, self.waves) < 1 or self.tiles > self.waves * self.sms:
            raise ValueError(f"{self.tiles} tiles cannot run in {self.waves} waves on {self.sms} SMs")

    @property
    def efficiency(self) -> float:
        return self.tiles / (self.waves * self.sms)


@reference
def gemm_waves(m: int, n: int, sms: int, tile: int = 128) -> Waves:
    """A (m, n) output cut in ``tile`` x ``tile`` blocks, one block per SM at a time."""
    if min(m, n, sms, tile) < 1:
        raise ValueError(f"m, n, sms and tile must be positive, got {m}, {n}, {sms}, {tile}")
    tiles = math.ceil(m / tile) * math.ceil(n / tile)
    return Waves(tiles, sms, math.ceil(tiles / sms))


REGIMES = ("launch", "underfilled", "waves", "compute")


@reference
def gemm_regime(m: int, n: int, k: int, sms: int, peak_flops: float, *, launch_overhead_s: float = 5e-6,
                tile: int = 128, min_efficiency: float = 0.8) -> str:
    """Which limit a GEMM hits first, in a simple model of a GPU:

    - "launch": at peak the work would take less than launching a kernel does;
    - "underfilled": fewer output tiles than SMs, so some SMs have nothing to do;
    - "waves": the last wave of tiles leaves SMs idle (wave efficiency < ``min_efficiency``);
    - "compute": enough work, well spread: the GEMM can run near peak.
    """
    if gemm_flops(m, n, k) / peak_flops < launch_overhead_s:
        return "launch"
    w = gemm_waves(m, n, sms, tile)
    if w.tiles < sms:
        return "underfilled"
    if w.efficiency < min_efficiency:
        return "waves"
    return "compute"


@reference
def regime(n: int, sms: int, peak_flops: float, launch_overhead_s: float = 5e-6, tile: int = 128) -> str:
    """The exercise's form: ``gemm_regime`` of an n x n x n GEMM."""
    return gemm_regime(n, n, n, sms, peak_flops, launch_overhead_s=launch_overhead_s, tile=tile)
