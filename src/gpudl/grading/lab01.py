"""Checks for lab01_performance_basics: the visible cases.

Each check runs the public cases shown in the released notebook; ``check.NAME(fn, hidden=True)``
runs the instructor's hidden cases (``gpudl_instructor.checks.lab01``) through the same
comparison, ``_compare_NAME(fn, cases, ref)``, with the live references in place of ``ref``.
The expected values of the visible cases are the datasheets' peaks (``hardware.PEAKS``), an
invariant (a roofline is the lower of its two limits) or the values the references returned for
exactly these cases at release (``expected("lab01")``). The questions' visible checks say only
whether an answer is well-formed; the verdict is the hidden check's.
"""
from __future__ import annotations

import math
import numbers
from types import SimpleNamespace
from typing import Any, Callable, Sequence

import numpy as np

from .. import hardware, roofline
from . import Case, GradingError, assert_equal, check_cases, choice_letters, draw, exercise, question
from .boundary import AxesSnapshot
from .expected import expected

LAB = "lab01"

# Course tools that compute what an exercise asks (a division, a peak): the student's code may not call them.
_DIVISIONS = ("gpudl.collectives.cost.algorithm_bandwidth",)


def _store() -> Any:
    return expected(LAB)


# --- 1. peak FLOP/s from units and clock -------------------------------------------------

def _compare_peak_flops_from_units(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.peak_flops_from_units, cases, forbid=[hardware.peak_flops], label="peak FLOP/s",
                rtol=1e-9, atol=0.0, hints={1e-6: "a factor of 1e-6: the clock is in MHz; 1 MHz = 1e6 Hz"})


@exercise
def peak_flops_from_units(fn: Callable) -> None:
    """``fn(sms, fma_per_clock_per_sm, clock_mhz)`` -> FLOP/s."""
    __tracebackhide__ = True
    cases = [Case((80, 512, 1530), label="the V100's tensor cores: 80 SMs x 512 FP16 FMA/clk at 1530 MHz"),
             Case((108, 64, 1410), label="the A100's FP32 cores: 108 SMs x 64 FMA/clk at 1410 MHz")]
    _compare_peak_flops_from_units(fn, cases, _store())


# --- 2. peak of a GPUSpec, tensor cores or not -------------------------------------------

_VISIBLE_SPEC_CASES = [("V100", "fp16", True), ("V100", "fp16", False), ("A100", "tf32", True),
                       ("A100", "fp32", True), ("T4", "int8", True),
                       ("H100-SXM", "bf16", True)]      # Hopper quotes tensor-core peaks at a lower clock


def _compare_peak_from_spec(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    hints = {1830 / 1980: "the ratio of Hopper's two clocks: tensor-core peaks use spec.clock_hz(tensor=True, dtype=...)",
             1980 / 1830: "the ratio of Hopper's two clocks: CUDA-core peaks use the boost clock"}

    def mistakes(spec: hardware.GPUSpec, dtype: str, tensor_cores: bool = True) -> dict[str, Any]:
        """The known mistakes on this case, each the expected peak of the spec for other arguments."""
        if not tensor_cores:
            return {"did you use the tensor-core rate although tensor_cores=False?":
                    lambda: ref.peak_from_spec(spec, dtype, tensor_cores=True)}
        table = {"did you always use the CUDA-core rate? With tensor_cores=True use the tensor-core rate where the "
                 "GPU has one for the dtype": lambda: ref.peak_from_spec(spec, dtype, tensor_cores=False)}
        if dtype == "fp32":
            table['did you run "fp32" on the tensor cores at TF32\'s rate? FP32 never runs there: their mode for '
                  'FP32 data is "tf32", a separate entry'] = lambda: ref.peak_from_spec(spec, "tf32", tensor_cores=True)
        return table

    check_cases(fn, ref.peak_from_spec, cases, forbid=[hardware.peak_flops], label="peak FLOP/s of a GPUSpec",
                rtol=1e-9, atol=0.0, hints=hints, mistakes=mistakes)


def _spec_case(spec: hardware.GPUSpec, dtype: str, tensor_cores: bool, label: str = "") -> Case:
    """A case of ``peak_from_spec``: ``fn(spec, dtype, tensor_cores=...)``."""
    return Case((spec, dtype), {"tensor_cores": tensor_cores},
                label=f"the {label or spec.name}, {dtype}, tensor_cores={tensor_cores}")


@exercise
def peak_from_spec(fn: Callable) -> None:
    """``fn(spec, dtype, tensor_cores=True)`` -> FLOP/s of a GPU from its units."""
    __tracebackhide__ = True
    cases = [_spec_case(hardware.SPECS[n], dt, tc) for n, dt, tc in _VISIBLE_SPEC_CASES]
    # The GPUs of SPECS are real: their datasheets' peaks are the expected values.
    datasheet = SimpleNamespace(peak_from_spec=lambda spec, dtype, tensor_cores=True:
                                hardware.peak_flops(spec, dtype, tensor_cores=tensor_cores))
    _compare_peak_from_spec(fn, cases, datasheet)


# --- 3. latency and throughput ------------------------------------------------------------

def _compare_batch_latency(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.batch_latency, cases, label="latency from throughput", rtol=1e-9, atol=0.0,
                hints={1e3: "a factor of 1e3: the answer is in seconds, not milliseconds"})


@exercise
def batch_latency(fn: Callable) -> None:
    """``fn(throughput_fps, batch)`` -> seconds until a batch's results are out."""
    __tracebackhide__ = True
    _compare_batch_latency(fn, [Case((30.0, 1)), Case((30.0, 2)), Case((30.0, 60))], _store())


@exercise
@question
def fps_question(answer: str) -> None:
    """The lecture's question: a system delivers 30 FPS; which latencies are possible? Here: the
    answer's form only (letters of A-D); whether they are right is judged when graded."""
    __tracebackhide__ = True
    choice_letters(answer, "ABCD")


# --- 4. FLOPs and bytes of layers ----------------------------------------------------------

def _compare_conv2d_flops(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.conv2d_flops, cases, label="convolution FLOPs", rtol=0.0, atol=0.0, dtype="int8")


@exercise
def conv2d_flops(fn: Callable) -> None:
    """``fn(in_shape, out_shape, kernel_size, bias=False)`` -> FLOPs."""
    __tracebackhide__ = True
    cases = [Case(((1, 3, 416, 480), (1, 16, 208, 240), 3), {"bias": True}, label="the lecture's 3x3 conv with bias"),
             Case(((8, 64, 56, 56), (8, 64, 56, 56), 3), {"bias": False})]
    _compare_conv2d_flops(fn, cases, _store())


def _compare_linear_intensity(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.linear_intensity, cases, label="a linear layer's arithmetic intensity", rtol=1e-9, atol=0.0)


@exercise
def linear_intensity(fn: Callable) -> None:
    """``fn(batch, in_features, out_features, bytes_per_element)`` -> FLOP/byte."""
    __tracebackhide__ = True
    cases = [Case((512, 1024, 4096, 2), label="the lecture's linear layer, batch 512, FP16"),
             Case((1, 1024, 4096, 2), label="the lecture's linear layer, batch 1, FP16")]
    _compare_linear_intensity(fn, cases, _store())


# --- 5. memory- or compute-bound ------------------------------------------------------------

def _compare_bound(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.bound_from_peaks, cases, label="memory- or compute-bound", compare=assert_equal,
                name="label", hint="below the ridge point (peak FLOP/s / bandwidth) an op is memory-bound")


def _v100_fp16() -> tuple[float, float]:
    """The V100's FP16 tensor-core peak and its bandwidth, the lecture's device."""
    return hardware.peak_flops("V100", "fp16"), hardware.peak_bandwidth("V100")


# The lecture's table (FLOPs, bytes): a 1024 -> 4096 linear layer in FP16 reads x and W and writes y.
_LECTURE_OPS = {
    "linear, batch 512": (2 * 512 * 1024 * 4096, 2 * (512 * 1024 + 1024 * 4096 + 512 * 4096)),
    "linear, batch 1": (2 * 1 * 1024 * 4096, 2 * (1 * 1024 + 1024 * 4096 + 1 * 4096)),
    "3x3 max pooling": (9 * 10**6, 4 * 10**6),
    "ReLU": (10**6, 4 * 10**6),
}


@exercise
def bound(fn: Callable) -> None:
    """``fn(flops, nbytes, peak_flops, peak_bandwidth)`` -> "memory" or "compute"."""
    __tracebackhide__ = True
    v100 = _v100_fp16()
    cases = [Case((f, b, *v100), label=f"the lecture's {name} on a V100 (FP16)") for name, (f, b) in _LECTURE_OPS.items()]
    _compare_bound(fn, cases, _store())


# --- 6. utilization and the four quadrants ---------------------------------------------------

def _compare_utilization(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.utilization, cases, forbid=list(_DIVISIONS), label="utilization", rtol=1e-12, atol=1e-15)


@exercise
def utilization(fn: Callable) -> None:
    """``fn(achieved, peak)`` -> a fraction."""
    __tracebackhide__ = True
    cases = [Case((200e9, 1e12), label="the lecture's 200 GB/s of 1 TB/s"), Case((90e12, 125e12))]
    _compare_utilization(fn, cases, _store())


def _compare_limiter(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.limiter, cases, label="the limiter", compare=assert_equal,
                name="label", hint="a unit is busy when its utilization is at least 0.7 (the lecture's rule)")


@exercise
def limiter(fn: Callable) -> None:
    """``fn(math_utilization, memory_utilization)`` -> "math", "memory", "both" or "latency"."""
    __tracebackhide__ = True
    cases = [Case((0.9, 0.2)), Case((0.1, 0.85)), Case((0.8, 0.8)), Case((0.3, 0.4)),
             Case((0.6, 0.55), label="utilizations 0.6 and 0.55 (both below 0.7)"),
             Case((0.7, 0.1), label="math utilization exactly 0.7 ('at least 0.7' includes 0.7)")]
    _compare_limiter(fn, cases, _store())


# --- 7. the roofline -----------------------------------------------------------------------

def _compare_attainable(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.roof, cases, forbid=[roofline.roofline_plot], label="the roofline", rtol=1e-9, atol=0.0)


def _a100_fp16() -> tuple[float, float]:
    """The A100's FP16 tensor-core peak and its bandwidth."""
    return hardware.peak_flops("A100", "fp16"), hardware.peak_bandwidth("A100")


@exercise
def attainable(fn: Callable) -> None:
    """``fn(intensity, peak_flops, peak_bandwidth)`` -> attainable FLOP/s (scalars or arrays)."""
    __tracebackhide__ = True
    a100 = _a100_fp16()
    cases = [Case((1.0, *a100), label="intensity 1 on an A100"), Case((1000.0, *a100), label="intensity 1000 on an A100"),
             Case((np.array([0.25, 2.25, 315.0]), *a100), label="an array of intensities on an A100")]
    _compare_attainable(fn, cases, _store())


def _compare_plot_roofline(fn: Callable, setups: Sequence[tuple[float, float, dict[str, float]]]) -> None:
    """Each setup ``(peak, bandwidth, ops)`` drawn by the student and read back."""
    __tracebackhide__ = True
    for peak, bw, ops in setups:
        ax = draw(fn, peak, bw, dict(ops), forbid=[roofline.roofline_plot], label="the roofline plot",
                  what="plot_roofline")
        _inspect_roofline(ax, peak, bw, ops)


@exercise
def plot_roofline(fn: Callable) -> None:
    """``fn(ax, peak_flops, peak_bandwidth, ops)`` draws on ``ax``: log-log axes, the roof as
    its first line, one marker per op at (intensity, attainable)."""
    __tracebackhide__ = True
    _compare_plot_roofline(fn, [(*_v100_fp16(), {"ReLU": 0.25, "linear b=512": 315.0})])


_ROOF_RTOL = 1e-6


def _on_roof(x: np.ndarray, y: np.ndarray, peak: float, bw: float) -> np.ndarray:
    """Where (x, y) lies on the roofline: no higher than either limit, and at one of them."""
    slope, flat = x * bw, np.full_like(x, peak)
    below = (y <= slope * (1 + _ROOF_RTOL)) & (y <= flat * (1 + _ROOF_RTOL))
    touches = np.isclose(y, slope, rtol=_ROOF_RTOL, atol=0.0) | np.isclose(y, flat, rtol=_ROOF_RTOL, atol=0.0)
    return below & touches


def _inspect_roofline(ax: AxesSnapshot, peak: float, bw: float, ops: dict[str, float]) -> None:
    __tracebackhide__ = True
    if ax.get_xscale() != "log" or ax.get_yscale() != "log":
        raise GradingError(f"the axes are {ax.get_xscale()} x {ax.get_yscale()}: a roofline spans decades of "
                           "intensity and FLOP/s, so use log scales on both (ax.loglog or set_xscale/set_yscale)")
    if not ax.lines:
        raise GradingError("nothing was drawn: draw the roof with ax.plot or ax.loglog")
    roof = ax.lines[0]
    x, y = (np.asarray(v, dtype=float).ravel() for v in roof.get_data())
    if x.size < 3 or x.size != y.size:
        raise GradingError(f"the roof (the first line) has {x.size} point(s): draw it over many intensities")
    ridge = peak / bw
    if not (x.min() <= ridge / 4 and x.max() >= ridge * 4):
        raise GradingError(f"the roof spans intensities {x.min():.3g}..{x.max():.3g} FLOP/B; "
                           f"include the ridge point {ridge:.3g} with room on both sides")
    off = ~_on_roof(x, y, peak, bw)
    if off.any():
        i = int(np.argmax(off))
        raise GradingError(f"{int(off.sum())} of the {x.size} points of the roof (the first line) are off it; "
                           f"at intensity {x[i]:.4g} your line is at {y[i]:.4g} FLOP/s, but the roof there is "
                           f"the lower of the peak {peak:.4g} and intensity x bandwidth {x[i] * bw:.4g}\n"
                           "the roof is min(peak, intensity x bandwidth) at each x")
    points = []
    for line in ax.lines[1:]:
        px, py = (np.asarray(v, dtype=float).ravel() for v in line.get_data())
        points.extend(zip(px, py))
    for coll in ax.collections:
        points.extend(map(tuple, np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)))
    for name, ai in ops.items():
        marked = [(px, py) for px, py in points if math.isclose(px, ai, rel_tol=_ROOF_RTOL)]
        if not any(_on_roof(np.array([px]), np.array([py]), peak, bw)[0] for px, py in marked):
            raise GradingError(f"no marker for op {name!r} at intensity {ai:.4g} on the roof: mark each op where the "
                               "roof is at its intensity (ax.plot([x], [y], 'o') or ax.scatter)")


# --- 8. the energy of moving data ------------------------------------------------------------

@exercise
@question
def energy_ratio(answer: float) -> None:
    """How many times more energy does fetching two 8-bit operands from DRAM cost than from a large
    SRAM? Here: the answer's form only (a number, at least 1: the DRAM fetch costs more); whether it
    is right is judged when graded."""
    __tracebackhide__ = True
    _energy_ratio_form(answer)


def _energy_ratio_form(answer: Any) -> None:
    __tracebackhide__ = True
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        raise GradingError(f"your ratio is {type(answer).__name__} {answer!r}: answer with a number")
    if not math.isfinite(float(answer)):
        raise GradingError(f"your ratio is {answer}: answer with a finite number")
    if answer < 1:
        raise GradingError(f"your ratio is {answer:.6g}, less than 1: the question asks how many times *more* the "
                           "DRAM fetch costs, so divide the larger energy by the smaller")
