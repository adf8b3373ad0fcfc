"""The hidden cases of lab09_profiling_and_inference: drawn from the student's seed
(``gpudl.grading.rng``, with the labels the lab has always used), judged by the comparisons of the
course edition's checks (``gpudl.grading.lab09``) against the live references
(``gpudl_instructor.references.lab09``) or the same independent oracles as the visible cases
(torch's BN folding, exact integer arithmetic, the simulated device's speeds); and the verdict of
the question, whose visible check judges only the answer's form.
"""
from __future__ import annotations

import numpy as np
import torch

from gpudl.grading import check_choice, lab09 as visible, rng

from ..references import lab09 as ref
from . import hidden

LAB = visible.LAB


def _heavy(g: np.random.Generator, shape: tuple[int, ...], outliers: int = 2) -> np.ndarray:
    """Standard normals with ``outliers`` values of magnitude 20-60 at random places."""
    x = g.standard_normal(shape)
    flat = x.reshape(-1)
    idx = g.choice(flat.size, size=min(outliers, flat.size), replace=False)
    flat[idx] = g.choice([-1.0, 1.0], size=idx.size) * g.uniform(20, 60, size=idx.size)
    return x


@hidden(visible.kernel_summary)
def kernel_summary(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.kernel_summary")
    real = visible._real_trace(int(g.choice([4, 8, 12])), int(g.integers(1, 4)), int(g.integers(1, 4)),
                               int(g.integers(1, 4)), int(g.choice([8, 12, 16])))
    cases = [(visible._synthetic_trace(g, int(g.integers(2, 6))), None, "a synthetic trace"),
             (real, None, "a torch.profiler trace recorded by the check"),
             (real, int(g.integers(1, 4)), "the same trace with top=k"),
             (visible._synthetic_trace(g, 5), 1, "a synthetic trace with top=1")]
    visible._compare_kernel_summary(fn, cases, ref)


# The digest of the answer (the letters, keyed by the lab and the question; no student reads it).
_FOLDED = "279ee059ffea074b7fc7515de2767619"


@hidden(visible.lecture_question)
def lecture_question(answer) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCDE", _FOLDED,
                 "folding moves the BN's arithmetic into the convolution's weights; keeping the network in NHWC "
                 "removes the conversions. Which kernels are those two? (ReLU and add need a different fusion: "
                 "into the convolution's epilogue)", question="lecture")


@hidden(visible.chain_bytes)
def chain_bytes(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.chain_bytes")
    cases = [(int(g.integers(1, 5000)), int(g.integers(1, 5000)), int(g.choice([1, 2, 4, 8])), "") for _ in range(6)]
    cases.append((1, 1, 2, "a 1 x 1 tensor"))
    visible._compare_chain_bytes(fn, cases, ref)


@hidden(visible.predicted_speedup)
def predicted_speedup(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.predicted_speedup")
    cases = []
    for _ in range(6):
        ops = [(float(g.uniform(1e6, 1e12)), float(g.uniform(1e6, 1e10))) for _ in range(int(g.integers(1, 5)))]
        fused = (sum(f for f, _ in ops), float(g.uniform(0.2, 1.0)) * min(b for _, b in ops))
        cases.append((ops, fused, float(g.uniform(1e13, 1e15)), float(g.uniform(5e11, 5e12)), ""))
    visible._compare_predicted_speedup(fn, cases, ref)


@hidden(visible.fold_bn)
def fold_bn(fn) -> None:
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(21)
    g.manual_seed(int(rng(f"{LAB}.fold_bn").integers(2 ** 31)))
    gg = rng(f"{LAB}.fold_bn.shapes")
    cases = [(visible._bn_case(g, int(gg.integers(1, 9)), int(gg.integers(1, 9)), int(gg.choice([1, 3, 5])),
                               bool(gg.random() < 0.6), float(gg.choice([1e-5, 1e-3, 0.1])),
                               var_lo=float(gg.choice([0.001, 0.5]))), "") for _ in range(6)]
    visible._compare_fold_bn(fn, cases, g)


@hidden(visible.calibrate)
def calibrate(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.calibrate")
    cases = []
    for _ in range(4):
        x = _heavy(g, (int(g.integers(10, 200)), int(g.integers(1, 50))), int(g.integers(1, 5)))
        cases.append((x, str(g.choice(["max", "percentile"])), float(g.choice([99.0, 99.9, 99.99, 95.0])), ""))
    visible._compare_calibrate(fn, cases, ref)


@hidden(visible.quantize_per_tensor)
def quantize_per_tensor(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.quantize_per_tensor")
    cases = []
    for _ in range(4):
        x = _heavy(g, (int(g.integers(1, 30)), int(g.integers(1, 30))), 1)
        cases.append((x, float(np.abs(x).max() * g.choice([1.0, 0.1, 0.5])), ""))
    visible._compare_quantize_per_tensor(fn, cases, ref)


@hidden(visible.quantize_per_channel)
def quantize_per_channel(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.quantize_per_channel")
    cases = []
    for _ in range(4):
        shape = tuple(int(d) for d in g.integers(1, 7, size=int(g.integers(2, 5))))
        cases.append((_heavy(g, shape, 1), int(g.integers(0, len(shape))), ""))
    visible._compare_quantize_per_channel(fn, cases, ref)


@hidden(visible.int8_linear)
def int8_linear(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.int8_linear")
    shapes = [((int(g.integers(1, 20)), int(g.integers(1, 600)), int(g.integers(1, 20))), bool(g.random() < 0.5), "")
              for _ in range(5)]
    shapes.append(((5, 2048, 7), True, "K=2048 of +-127"))
    visible._compare_int8_linear(fn, [(visible._int8_case(g, m, k, n, extreme, True), label)
                                      for (m, k, n), extreme, label in shapes])


def _tuner_plans() -> list[tuple[list, str]]:
    """(steps, label): each step (key, {candidate: (steady s, cold s)}). The fastest when warm is
    never listed first, and is the slowest when cold (it compiles longest)."""
    g = rng(f"{LAB}.tune")
    plans = []
    for p in range(3):
        keys = []
        for _ in range(int(g.integers(2, 4))):
            names = [f"cfg{i}" for i in range(int(g.integers(2, 6)))]
            steady = {n: float(g.uniform(1e-5, 1e-2)) for n in names}
            best = min(steady, key=steady.get)
            if names[0] == best:                               # the winner is never the first candidate
                names[0], names[1] = names[1], names[0]
            worst_cold = max(steady.values()) * float(g.uniform(5, 50))
            times = {n: (steady[n], worst_cold if n == best else steady[n] * float(g.uniform(1, 2))) for n in names}
            key = f"({int(g.integers(16, 8192))}, {int(g.integers(16, 8192))}, {int(g.integers(16, 8192))})"
            keys.append((key, times))
        order = keys + [keys[int(i)] for i in g.integers(0, len(keys), size=2)]
        plans.append(([(k, t) for k, t in order], f"hidden plan {p}"))
    return plans


@hidden(visible.tune)
def tune(fn) -> None:
    __tracebackhide__ = True
    visible._compare_tune(fn, _tuner_plans())


@hidden(visible.largest_batch)
def largest_batch(fn) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.largest_batch")
    cases = []
    for _ in range(5):
        batches = sorted({int(b) for b in 2 ** g.integers(0, 11, size=int(g.integers(3, 9)))})
        lat = [float(b * g.uniform(2e-4, 2e-3) + g.uniform(1e-3, 8e-3)) for b in batches]
        order = g.permutation(len(batches))
        cases.append(([batches[i] for i in order], [lat[i] for i in order], float(g.choice([1 / 30, 1 / 60, 0.1])), ""))
    visible._compare_largest_batch(fn, cases, ref)
