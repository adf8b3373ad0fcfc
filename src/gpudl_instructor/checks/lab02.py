"""The hidden cases of lab02_matmul_flops: drawn from the student's seed (``gpudl.grading.rng``,
with the labels the lab has always used), plus edge cases, judged by the comparisons of the
course edition's checks (``gpudl.grading.lab02``) against the live references
(``gpudl_instructor.references.lab02``) or the same independent oracles as the visible cases.
"""
from __future__ import annotations

import numpy as np

from gpudl import hardware
from gpudl.grading import Case, check_choice, lab02 as visible, rng

from ..references import lab02 as ref
from . import hidden

LAB = visible.LAB


def _spec_dtype_cases(g: np.random.Generator, n: int) -> list[tuple[str, str]]:
    """``n`` (GPU, dtype) pairs that have a peak."""
    out = []
    while len(out) < n:
        name = str(g.choice(list(hardware.SPECS)))
        dt = str(g.choice(["fp64", "fp32", "tf32", "fp16", "bf16"]))
        try:
            hardware.peak_flops(name, dt)
        except ValueError:
            continue
        out.append((name, dt))
    return out


@hidden(visible.gemm_flops)
def gemm_flops(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.gemm_flops")
    cases = [Case(tuple(int(v) for v in g.integers(1, 20000, size=3))) for _ in range(6)]
    cases += [Case((1, 1, 1), label="1 x 1 times 1 x 1"), Case((1, 4096, 7), label="a row vector times a matrix"),
              Case((3, 5, 7), label="m=3, n=5, k=7 (all different)")]
    visible._compare_gemm_flops(fn, cases, ref)


@hidden(visible.cpu_timer)
def cpu_timer(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.cpu_timer")
    probes = []
    for _ in range(2):
        d = float(g.uniform(0.008, 0.012))
        probes.append(dict(label=f"work of {d * 1e3:.2f} ms, a 70 ms first call, every 5th call 6x slower",
                           seconds=d, first_call_s=0.07, slow_every=5, slow_factor=6.0,
                           warmup=int(g.integers(1, 4)), repeats=int(g.choice([5, 7, 9]))))
    visible._compare_cpu_timer(fn, probes)


@hidden(visible.gpu_timer)
def gpu_timer(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.gpu_timer")
    d = float(g.uniform(0.004, 0.006))
    w, r = int(g.integers(2, 5)), int(g.choice([8, 10, 12]))
    probes = [dict(label=f"asynchronous work of {d * 1e3:.2f} ms", seconds=d, warmup=w, repeats=r),
              dict(label=f"asynchronous work of {d * 1e3:.2f} ms, a 40 ms first call", seconds=d, first_call_s=0.04,
                   warmup=w, repeats=r),
              dict(label=f"asynchronous work of {d * 1e3:.2f} ms, every 4th run 4x slower", seconds=d, slow_every=4,
                   slow_factor=4.0, warmup=w, repeats=r)]
    visible._compare_gpu_timer(fn, probes, 4096)


def _sim_size(dtype: str, seconds: float) -> int:
    """The n whose n^3 matmul takes about ``seconds`` on the checks' simulated device."""
    return int(round((seconds * visible._SIM_RATES[dtype] / 2) ** (1 / 3) / 16)) * 16


@hidden(visible.matmul_tflops)
def matmul_tflops(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.matmul_tflops")
    cases = [(dt, _sim_size(dt, float(g.uniform(0.0015, 0.003))), bool(g.integers(0, 2)))
             for dt in g.permutation(["fp32", "tf32", "fp16", "bf16", "fp32"])]
    cases += [("tf32", 512, False), ("fp32", 400, False)]       # TF32 on, then FP32: was it turned off?
    visible._compare_matmul_tflops(fn, cases, 4096)


@hidden(visible.sweep)
def sweep(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.sweep")
    cases = [([int(v) for v in g.integers(16, 8193, size=int(g.integers(1, 6)))],
              [str(d) for d in g.permutation(["fp32", "tf32", "fp16", "bf16"])[: int(g.integers(1, 5))]])
             for _ in range(3)] + [([4096], ["bf16"])]
    visible._compare_sweep(fn, cases)


@hidden(visible.plot_sweep)
def plot_sweep(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.plot_sweep")
    setups = []
    for _ in range(2):
        sizes = sorted({int(2 ** e) for e in g.integers(5, 14, size=int(g.integers(2, 6)))})
        dts = [str(d) for d in g.permutation(["fp32", "tf32", "fp16", "bf16"])[: int(g.integers(1, 5))]]
        results = {d: [float(v) for v in g.uniform(0.5, 900, size=len(sizes))] for d in dts}
        peaks = {d: (float(g.uniform(50, 1000)) if g.integers(0, 3) else None) for d in dts}
        setups.append((sizes, results, peaks))
    setups.append(([64, 128], {"fp32": [0.01, 0.02]}, {"fp32": None}))   # the CPU: no peak known
    visible._compare_plot_sweep(fn, setups)


@hidden(visible.fraction_of_peak)
def fraction_of_peak(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.fraction_of_peak")
    good = [(float(g.uniform(0.02, 0.98)) * hardware.peak_flops(s, d) / 1e12, s, d) for s, d in _spec_dtype_cases(g, 7)]
    above = [(float(g.uniform(1.2, 300)) * hardware.peak_flops(s, d) / 1e12, s, d) for s, d in _spec_dtype_cases(g, 2)]
    visible._compare_fraction_of_peak(fn, good, above, ref)


@hidden(visible.regime)
def regime(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.regime")
    cases = []
    for _ in range(10):
        name, dt = _spec_dtype_cases(g, 1)[0]
        spec = hardware.SPECS[name]
        n = int(np.exp(g.uniform(np.log(32), np.log(16384))))
        kw = {} if g.integers(0, 2) else {"tile": int(g.choice([64, 128, 256])),
                                           "launch_overhead_s": float(g.choice([2e-6, 5e-6, 2e-5]))}
        cases.append(Case((n, spec.sms, hardware.peak_flops(spec, dt)), kw, label=f"n = {n} on the {name} in {dt}"
                          + (f" with {kw}" if kw else "")))
    cases += [Case((1000, 64, 1e13), label="n = 1000 on 64 SMs: exactly 64 tiles (not a multiple of 128)"),
              Case((1025, 64, 1e13), label="n = 1025 on 64 SMs: a 9th row and column of tiles"),
              Case((1500, 132, 1e12), {"tile": 100}, label="n = 1500, tiles of 100, on 132 SMs"),
              Case((2048, 132, 2 * 2048 ** 3 / 5e-6 * 1.01), label="n = 2048 just faster than a launch at peak"),
              Case((1554, 132, 1e15), label="n = 1554 at 1 PFLOP/s: 7.5 GFLOP take 7.5 us, more than a launch")]
    visible._compare_regime(fn, cases, ref)


# --- questions: the verdict (the visible check says only whether the answer is well-formed) -----

# The digests of the answers (the first keeps the key it was made with; no student reads it).
_ANSWERS = {"lecture_code": "cc59aecdf8d1a49ca6dd5831dcb45344", "first_call": "fa26acd79712cb4e2c367cc6ab11b978"}


@hidden(visible.lecture_code_question)
def lecture_code_question(answer) -> None:
    __tracebackhide__ = True
    visible._one_letter(answer, "ABCD")
    check_choice(LAB, answer, "ABCD", _ANSWERS["lecture_code"], "when does torch.matmul on a GPU return, and what "
                 "did time.time() measure between its two readings?", question="seed")


@hidden(visible.first_call_question)
def first_call_question(answer) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCDE", _ANSWERS["first_call"],
                 "pick every letter that is a one-off or start-up cost; more than one is.", question="first_call")
