"""Checks for lab01_performance_basics.

Each check takes the student's function and ``hidden=False`` (the public cases shown in the
released notebook) or ``hidden=True`` (cases drawn from the instructor's secret seed, plus
edge cases). The reference answers come from ``gpudl.hardware`` and ``gpudl.roofline``,
which the student's code may not call while it is checked.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import hardware, roofline
from . import (Case, GradingError, assert_close, assert_equal, check_cases, check_choice, draw, exercise, rng)
from .boundary import AxesSnapshot

LAB = "lab01"


# --- 1. peak FLOP/s from units and clock -------------------------------------------------

def _peak_from_units_ref(sms, fma_per_clock_per_sm, clock_mhz):
    return hardware.peak_from_units(sms, fma_per_clock_per_sm, clock_mhz * 1e6)     # the exercise takes MHz


@exercise
def peak_flops_from_units(fn: Callable, hidden: bool = False) -> None:
    """``fn(sms, fma_per_clock_per_sm, clock_mhz)`` -> FLOP/s."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((80, 512, 1530), label="the V100's tensor cores: 80 SMs x 512 FP16 FMA/clk at 1530 MHz"),
                 Case((108, 64, 1410), label="the A100's FP32 cores: 108 SMs x 64 FMA/clk at 1410 MHz")]
    else:
        g = rng(f"{LAB}.peak_flops_from_units")
        cases = [Case((int(g.integers(8, 200)), int(2 ** g.integers(4, 13)), float(g.integers(700, 2100))))
                 for _ in range(6)] + [Case((1, 1, 1000.0), label="1 SM, 1 FMA per clock, 1 GHz")]
    check_cases(fn, _peak_from_units_ref, cases, forbid=[hardware.peak_flops, hardware.peak_from_units],
                label="peak FLOP/s",
                rtol=1e-9, atol=0.0,
                hints={1e-6: "a factor of 1e-6: the clock is in MHz; 1 MHz = 1e6 Hz"})


# --- 2. peak of a GPUSpec, tensor cores or not -------------------------------------------

_VISIBLE_SPEC_CASES = [("V100", "fp16", True), ("V100", "fp16", False), ("A100", "tf32", True),
                       ("A100", "fp32", True), ("T4", "int8", True),
                       ("H100-SXM", "bf16", True)]      # Hopper quotes tensor-core peaks at a lower clock


def _spec_cases(g: np.random.Generator, n: int) -> list[tuple[str, str, bool]]:
    out = []
    while len(out) < n:
        name = str(g.choice(list(hardware.SPECS)))
        spec = hardware.SPECS[name]
        dtypes = sorted(set(spec.cuda_fma_per_sm) | set(spec.tensor_fma_per_sm))
        dt = str(g.choice(dtypes))
        tc = bool(g.integers(0, 2))
        try:
            hardware.peak_flops(spec, dt, tensor_cores=tc)
        except ValueError:
            continue
        out.append((name, dt, tc))
    return out


@exercise
def peak_from_spec(fn: Callable, hidden: bool = False) -> None:
    """``fn(spec, dtype, tensor_cores=True)`` -> FLOP/s, like ``hardware.peak_flops``."""
    __tracebackhide__ = True
    chosen = _VISIBLE_SPEC_CASES if not hidden else (
        _spec_cases(rng(f"{LAB}.peak_from_spec"), 8) + [("H100-SXM", "bf16", True), ("H200", "fp32", True)])
    cases = [Case((hardware.SPECS[n], dt), {"tensor_cores": tc}, label=f"the {n}, {dt}, tensor_cores={tc}")
             for n, dt, tc in chosen]
    hints = {1830 / 1980: "the ratio of Hopper's two clocks: tensor-core peaks use spec.clock_hz(tensor=True, dtype=...)",
             1980 / 1830: "the ratio of Hopper's two clocks: CUDA-core peaks use the boost clock"}
    check_cases(fn, lambda s, d, tensor_cores=True: hardware.peak_flops(s, d, tensor_cores=tensor_cores), cases,
                forbid=[hardware.peak_flops], label="peak FLOP/s of a GPUSpec", rtol=1e-9, atol=0.0, hints=hints)


# --- 3. latency and throughput ------------------------------------------------------------

@exercise
def batch_latency(fn: Callable, hidden: bool = False) -> None:
    """``fn(throughput_fps, batch)`` -> seconds until a batch's results are out."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((30.0, 1)), Case((30.0, 2)), Case((30.0, 60))]
    else:
        g = rng(f"{LAB}.batch_latency")
        cases = [Case((float(g.uniform(1, 5000)), int(g.integers(1, 512)))) for _ in range(6)]
    check_cases(fn, lambda fps, batch: batch / fps, cases, label="latency from throughput", rtol=1e-9, atol=0.0,
                hints={1e3: "a factor of 1e3: the answer is in seconds, not milliseconds"})


# The accepted letters, hashed so the answer is not spelled out in the package.
_FPS_ANSWER = "9351aa54f658bb3837c318d12cc2cae1"


@exercise
def fps_question(answer: str) -> None:
    """The lecture's question: a system delivers 30 FPS; which latencies are possible?"""
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _FPS_ANSWER,
                 "latency = batch / throughput; which batch sizes give each latency at 30 FPS?")


# --- 4. FLOPs and bytes of layers ----------------------------------------------------------

@exercise
def conv2d_flops(fn: Callable, hidden: bool = False) -> None:
    """``fn(in_shape, out_shape, kernel_size, bias=False)`` -> FLOPs."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case(((1, 3, 416, 480), (1, 16, 208, 240), 3), {"bias": True}, label="the lecture's 3x3 conv with bias"),
                 Case(((8, 64, 56, 56), (8, 64, 56, 56), 3), {"bias": False})]
    else:
        g = rng(f"{LAB}.conv2d_flops")
        cases = []
        for _ in range(6):
            n, c, k = int(g.integers(1, 9)), int(g.integers(1, 129)), int(g.integers(1, 129))
            r = int(g.choice([1, 3, 5, 7]))
            p, q = int(g.integers(1, 65)), int(g.integers(1, 65))
            cases.append(Case(((n, c, p + r - 1, q + r - 1), (n, k, p, q), r), {"bias": bool(g.integers(0, 2))}))
        cases.append(Case(((2, 5, 9, 9), (2, 7, 1, 1), 9), {"bias": True}, label="a 9x9 filter covering a 9x9 input"))
    check_cases(fn, roofline.conv2d_flops, cases, forbid=[roofline.conv2d_flops], label="convolution FLOPs",
                rtol=0.0, atol=0.0, dtype="int8")


@exercise
def linear_intensity(fn: Callable, hidden: bool = False) -> None:
    """``fn(batch, in_features, out_features, bytes_per_element)`` -> FLOP/byte."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((512, 1024, 4096, 2), label="the lecture's linear layer, batch 512, FP16"),
                 Case((1, 1024, 4096, 2), label="the lecture's linear layer, batch 1, FP16")]
    else:
        g = rng(f"{LAB}.linear_intensity")
        cases = [Case((int(g.integers(1, 4096)), int(g.integers(1, 8192)), int(g.integers(1, 8192)),
                       int(g.choice([1, 2, 4, 8])))) for _ in range(6)]

    dtype_of = {1: "int8", 2: "fp16", 4: "fp32", 8: "fp64"}

    def ref(b, i, o, nbytes):
        return roofline.linear_flops(b, i, o) / roofline.linear_bytes(b, i, o, dtype_of[nbytes])

    check_cases(fn, ref, cases, forbid=[roofline.linear_flops, roofline.linear_bytes, roofline.arithmetic_intensity],
                label="a linear layer's arithmetic intensity", rtol=1e-9, atol=0.0)


# --- 5. memory- or compute-bound ------------------------------------------------------------

@exercise
def bound(fn: Callable, hidden: bool = False) -> None:
    """``fn(flops, nbytes, peak_flops, peak_bandwidth)`` -> "memory" or "compute"."""
    __tracebackhide__ = True
    v100 = (hardware.peak_flops("V100", "fp16"), hardware.peak_bandwidth("V100"))
    lecture_ops = {  # the lecture's table, V100 FP16
        "linear, batch 512": (roofline.linear_flops(512, 1024, 4096), roofline.linear_bytes(512, 1024, 4096, "fp16")),
        "linear, batch 1": (roofline.linear_flops(1, 1024, 4096), roofline.linear_bytes(1, 1024, 4096, "fp16")),
        "3x3 max pooling": (9 * 10**6, 4 * 10**6),
        "ReLU": (10**6, 4 * 10**6),
    }
    if not hidden:
        cases = [Case((f, b, *v100), label=f"the lecture's {name} on a V100 (FP16)") for name, (f, b) in lecture_ops.items()]
    else:
        g = rng(f"{LAB}.bound")
        cases = []
        for _ in range(8):
            spec = hardware.SPECS[str(g.choice(list(hardware.SPECS)))]
            peak, bw = hardware.peak_flops(spec, "fp32"), hardware.peak_bandwidth(spec)
            ai = float(np.exp(g.uniform(np.log(0.1), np.log(2000))))
            nbytes = float(g.integers(10**3, 10**9))
            cases.append(Case((ai * nbytes, nbytes, peak, bw), label=f"intensity {ai:.3g} FLOP/B on the {spec.name} (FP32)"))
        ridge = v100[0] / v100[1]
        cases.append(Case((ridge * 2.0e6 * 1.01, 2.0e6, *v100), label="just above the V100's ridge point"))
        cases.append(Case((ridge * 2.0e6 * 0.99, 2.0e6, *v100), label="just below the V100's ridge point"))
    check_cases(fn, roofline.bound_from_peaks, cases, forbid=[roofline.bound, roofline.bound_from_peaks],
                label="memory- or compute-bound", compare=assert_equal,
                name="label", hint="below the ridge point (peak FLOP/s / bandwidth) an op is memory-bound")


# --- 6. utilization and the four quadrants ---------------------------------------------------

@exercise
def utilization(fn: Callable, hidden: bool = False) -> None:
    """``fn(achieved, peak)`` -> a fraction."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((200e9, 1e12), label="the lecture's 200 GB/s of 1 TB/s"), Case((90e12, 125e12))]
    else:
        g = rng(f"{LAB}.utilization")
        cases = [Case((float(g.uniform(0, 1)) * p, p)) for p in g.uniform(1e9, 2e15, size=6)] + [Case((0.0, 1e12))]
    check_cases(fn, roofline.utilization, cases, forbid=[roofline.utilization], label="utilization", rtol=1e-12,
                atol=1e-15)


@exercise
def limiter(fn: Callable, hidden: bool = False) -> None:
    """``fn(math_utilization, memory_utilization)`` -> "math", "memory", "both" or "latency"."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((0.9, 0.2)), Case((0.1, 0.85)), Case((0.8, 0.8)), Case((0.3, 0.4)),
                 Case((0.6, 0.55), label="utilizations 0.6 and 0.55 (both below 0.7)"),
                 Case((0.7, 0.1), label="math utilization exactly 0.7 ('at least 0.7' includes 0.7)")]
    else:
        g = rng(f"{LAB}.limiter")
        cases = [Case((float(a), float(b))) for a, b in g.uniform(0, 1, size=(8, 2))]
        cases += [Case((0.7, 0.1), label="math utilization exactly 0.7"), Case((0.69, 0.71))]
    check_cases(fn, roofline.limiter, cases, forbid=[roofline.limiter], label="the limiter", compare=assert_equal,
                name="label", hint="a unit is busy when its utilization is at least 0.7 (the lecture's rule)")


# --- 7. the roofline -----------------------------------------------------------------------

@exercise
def attainable(fn: Callable, hidden: bool = False) -> None:
    """``fn(intensity, peak_flops, peak_bandwidth)`` -> attainable FLOP/s (scalars or arrays)."""
    __tracebackhide__ = True
    a100 = (hardware.peak_flops("A100", "fp16"), hardware.peak_bandwidth("A100"))
    if not hidden:
        cases = [Case((1.0, *a100), label="intensity 1 on an A100"), Case((1000.0, *a100), label="intensity 1000 on an A100"),
                 Case((np.array([0.25, 2.25, 315.0]), *a100), label="an array of intensities on an A100")]
    else:
        g = rng(f"{LAB}.attainable")
        cases = [Case((np.exp(g.uniform(-3, 8, size=int(g.integers(1, 20)))), float(g.uniform(1e12, 2e15)),
                       float(g.uniform(1e11, 5e12)))) for _ in range(5)]
        cases.append(Case((np.array([a100[0] / a100[1]]), *a100), label="exactly the ridge point"))
    check_cases(fn, roofline.roof, cases, forbid=[roofline.roof, roofline.attainable_flops, roofline.roofline_plot],
                label="the roofline", rtol=1e-9, atol=0.0)


@exercise
def plot_roofline(fn: Callable, hidden: bool = False) -> None:
    """``fn(ax, peak_flops, peak_bandwidth, ops)`` draws on ``ax``: log-log axes, the roof as
    its first line, one marker per op at (intensity, attainable)."""
    __tracebackhide__ = True
    if not hidden:
        setups = [(hardware.peak_flops("V100", "fp16"), hardware.peak_bandwidth("V100"),
                   {"ReLU": 0.25, "linear b=512": 315.0})]
    else:
        g = rng(f"{LAB}.plot_roofline")
        setups = [(float(g.uniform(1e13, 2e15)), float(g.uniform(3e11, 5e12)),
                   {f"op{i}": float(np.exp(g.uniform(-2, 7))) for i in range(int(g.integers(1, 5)))})
                  for _ in range(2)]
    for peak, bw, ops in setups:
        ax = draw(fn, peak, bw, dict(ops), forbid=[roofline.roofline_plot, roofline.attainable_flops, roofline.roof],
                  label="the roofline plot", what="plot_roofline")
        _inspect_roofline(ax, peak, bw, ops)


def _inspect_roofline(ax: AxesSnapshot, peak: float, bw: float, ops: dict[str, float]) -> None:
    __tracebackhide__ = True
    if ax.get_xscale() != "log" or ax.get_yscale() != "log":
        raise GradingError(f"the axes are {ax.get_xscale()} x {ax.get_yscale()}: a roofline spans decades of "
                           "intensity and FLOP/s, so use log scales on both (ax.loglog or set_xscale/set_yscale)")
    if not ax.lines:
        raise GradingError("nothing was drawn: draw the roof with ax.plot or ax.loglog")
    roof = ax.lines[0]
    x, y = (np.asarray(v, dtype=float) for v in roof.get_data())
    if x.size < 3:
        raise GradingError(f"the roof (the first line) has {x.size} point(s): draw it over many intensities")
    ridge = peak / bw
    if not (x.min() <= ridge / 4 and x.max() >= ridge * 4):
        raise GradingError(f"the roof spans intensities {x.min():.3g}..{x.max():.3g} FLOP/B; "
                           f"include the ridge point {ridge:.3g} with room on both sides")
    try:
        assert_close(y, roofline.roof(x, peak, bw), rtol=1e-6, atol=0.0, name="roof (the first line's y values)")
    except GradingError as exc:
        raise GradingError(f"{exc}\nthe roof is min(peak, intensity x bandwidth) at each x") from None
    points = []
    for line in ax.lines[1:]:
        px, py = (np.asarray(v, dtype=float).ravel() for v in line.get_data())
        points.extend(zip(px, py))
    for coll in ax.collections:
        points.extend(map(tuple, np.asarray(coll.get_offsets(), dtype=float)))
    for name, ai in ops.items():
        want = (ai, min(peak, ai * bw))
        if not any(np.isclose(px, want[0], rtol=1e-6) and np.isclose(py, want[1], rtol=1e-6) for px, py in points):
            raise GradingError(f"no marker for op {name!r} at intensity {ai:.4g}, attainable {want[1]:.4g} FLOP/s: "
                               "mark each op on the roof (ax.plot([x], [y], 'o') or ax.scatter)")


# --- 8. the energy of moving data ------------------------------------------------------------

@exercise
def energy_ratio(answer: float) -> None:
    """How many times more energy does fetching two 8-bit operands from DRAM cost than from a large SRAM?"""
    __tracebackhide__ = True
    e = hardware.ENERGY_PJ
    expected = e["fetch_two_int8_from_dram"] / e["fetch_two_int8_from_large_sram"]
    assert_close(answer, expected, rtol=1e-6, atol=0.0, name="ratio",
                 hints={10.0: "a factor of 10: compare DRAM with SRAM, not with the multiply"})
