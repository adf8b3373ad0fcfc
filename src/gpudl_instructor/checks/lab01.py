"""The hidden cases of lab01_performance_basics: drawn from the student's seed, judged against the
references (``gpudl_instructor.references.lab01``) by the visible checks' comparisons.

The peaks of made-up GPUs (``peak_from_spec``) are the only cases that are not what they were
before the split: the GPUs of ``gpudl.hardware.SPECS`` keep their datasheet peaks as data, which
``hardware.peak_flops`` answers, so the hidden cases draw units and clocks no datasheet has.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from gpudl import hardware
from gpudl.grading import Case, assert_close, check_choice, lab01 as visible, rng

from ..references import lab01 as ref
from . import hidden

LAB = "lab01"


# --- 1. peak FLOP/s from units and clock -------------------------------------------------

@hidden(visible.peak_flops_from_units)
def peak_flops_from_units(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.peak_flops_from_units")
    cases = [Case((int(g.integers(8, 200)), int(2 ** g.integers(4, 13)), float(g.integers(700, 2100))))
             for _ in range(6)] + [Case((1, 1, 1000.0), label="1 SM, 1 FMA per clock, 1 GHz")]
    visible._compare_peak_flops_from_units(fn, cases, ref)


# --- 2. peak of a GPUSpec, tensor cores or not -------------------------------------------

def _made_up_gpu(g: np.random.Generator, number: int, like: str | None = None,
                 slower_tensor_clock: bool | None = None) -> hardware.GPUSpec:
    """A GPU no datasheet has: the dtypes of a real one (``like``, else drawn), other SM counts,
    rates and clocks; with ``slower_tensor_clock``, tensor-core peaks quoted at a lower clock (as Hopper's)."""
    real = hardware.SPECS[like or str(g.choice(list(hardware.SPECS)))]
    boost = float(g.integers(700, 2100))
    if slower_tensor_clock is None:
        slower_tensor_clock = bool(g.integers(0, 2))
    return replace(real, name=f"GPU-{number} (made up, {real.architecture}-like)", sms=int(g.integers(8, 200)),
                   cuda_fma_per_sm={dt: int(2 ** g.integers(0, 9)) for dt in real.cuda_fma_per_sm},
                   tensor_fma_per_sm={dt: int(2 ** g.integers(6, 13)) for dt in real.tensor_fma_per_sm},
                   boost_clock_mhz=boost, tensor_clock_mhz=float(g.integers(500, int(boost))) if slower_tensor_clock
                   else None, source="made up for a hidden case of lab01")


@hidden(visible.peak_from_spec)
def peak_from_spec(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.peak_from_spec")
    cases = []
    while len(cases) < 8:
        spec = _made_up_gpu(g, len(cases) + 1)
        dtypes = sorted(set(spec.cuda_fma_per_sm) | set(spec.tensor_fma_per_sm))
        dt, tc = str(g.choice(dtypes)), bool(g.integers(0, 2))
        try:
            ref.peak_from_spec(spec, dt, tensor_cores=tc)
        except ValueError:                  # no such rate (TF32 off tensor cores, FP8 on CUDA cores)
            continue
        cases.append(visible._spec_case(spec, dt, tc))
    # A Hopper-like GPU: tensor-core peaks at the lower clock (FP64's at the boost clock), the flag
    # honoured where a tensor-core rate exists, FP32 never on tensor cores.
    hopper = _made_up_gpu(g, 9, like="H100-SXM", slower_tensor_clock=True)
    cases += [visible._spec_case(hopper, dt, tc) for dt, tc in
              (("bf16", True), ("fp16", False), ("fp32", True), ("fp64", True), ("tf32", True))]
    visible._compare_peak_from_spec(fn, cases, ref)


# --- 3. latency and throughput ------------------------------------------------------------

@hidden(visible.batch_latency)
def batch_latency(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.batch_latency")
    cases = [Case((float(g.uniform(1, 5000)), int(g.integers(1, 512)))) for _ in range(6)]
    visible._compare_batch_latency(fn, cases, ref)


# The accepted letters, hashed so that no file spells them out.
_FPS_ANSWER = "9351aa54f658bb3837c318d12cc2cae1"


@hidden(visible.fps_question)
def fps_question(answer) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _FPS_ANSWER,
                 "latency = batch / throughput; which batch sizes give each latency at 30 FPS?")


# --- 4. FLOPs and bytes of layers ----------------------------------------------------------

@hidden(visible.conv2d_flops)
def conv2d_flops(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.conv2d_flops")
    cases = []
    for _ in range(6):
        n, c, k = int(g.integers(1, 9)), int(g.integers(1, 129)), int(g.integers(1, 129))
        r = int(g.choice([1, 3, 5, 7]))
        p, q = int(g.integers(1, 65)), int(g.integers(1, 65))
        cases.append(Case(((n, c, p + r - 1, q + r - 1), (n, k, p, q), r), {"bias": bool(g.integers(0, 2))}))
    cases.append(Case(((2, 5, 9, 9), (2, 7, 1, 1), 9), {"bias": True}, label="a 9x9 filter covering a 9x9 input"))
    visible._compare_conv2d_flops(fn, cases, ref)


@hidden(visible.linear_intensity)
def linear_intensity(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.linear_intensity")
    cases = [Case((int(g.integers(1, 4096)), int(g.integers(1, 8192)), int(g.integers(1, 8192)),
                   int(g.choice([1, 2, 4, 8])))) for _ in range(6)]
    visible._compare_linear_intensity(fn, cases, ref)


# --- 5. memory- or compute-bound ------------------------------------------------------------

@hidden(visible.bound)
def bound(fn) -> None:
    __tracebackhide__ = True
    v100 = visible._v100_fp16()
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
    visible._compare_bound(fn, cases, ref)


# --- 6. utilization and the four quadrants ---------------------------------------------------

@hidden(visible.utilization)
def utilization(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.utilization")
    cases = [Case((float(g.uniform(0, 1)) * p, p)) for p in g.uniform(1e9, 2e15, size=6)] + [Case((0.0, 1e12))]
    visible._compare_utilization(fn, cases, ref)


@hidden(visible.limiter)
def limiter(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.limiter")
    cases = [Case((float(a), float(b))) for a, b in g.uniform(0, 1, size=(8, 2))]
    cases += [Case((0.7, 0.1), label="math utilization exactly 0.7"), Case((0.69, 0.71))]
    visible._compare_limiter(fn, cases, ref)


# --- 7. the roofline -----------------------------------------------------------------------

@hidden(visible.attainable)
def attainable(fn) -> None:
    __tracebackhide__ = True
    a100 = visible._a100_fp16()
    g = rng(f"{LAB}.attainable")
    cases = [Case((np.exp(g.uniform(-3, 8, size=int(g.integers(1, 20)))), float(g.uniform(1e12, 2e15)),
                   float(g.uniform(1e11, 5e12)))) for _ in range(5)]
    cases.append(Case((np.array([a100[0] / a100[1]]), *a100), label="exactly the ridge point"))
    visible._compare_attainable(fn, cases, ref)


@hidden(visible.plot_roofline)
def plot_roofline(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.plot_roofline")
    setups = [(float(g.uniform(1e13, 2e15)), float(g.uniform(3e11, 5e12)),
               {f"op{i}": float(np.exp(g.uniform(-2, 7))) for i in range(int(g.integers(1, 5)))})
              for _ in range(2)]
    visible._compare_plot_roofline(fn, setups)


# --- 8. the energy of moving data ------------------------------------------------------------

@hidden(visible.energy_ratio)
def energy_ratio(answer) -> None:
    __tracebackhide__ = True
    visible._energy_ratio_form(answer)
    assert_close(answer, ref.energy_ratio(), rtol=1e-6, atol=0.0, name="ratio",
                 hints={10.0: "a factor of 10: compare DRAM with SRAM, not with the multiply"})
