"""The hidden cases of lab04_cuda_programming_model's checks (``gpudl.grading.lab04``).

Each draws its cases from the student's seed under the label it always had ("lab04.saxpy", ...)
and hands them to the visible check's comparison, with the live references of
``gpudl_instructor.references.lab04`` in place of the stored expected values (the student's
process never sees them, so there is nothing to forbid: the course edition holds no answer).
The kernel exercises are judged against NumPy, and the kernel checker refuses the package's
kernels. The questions' verdicts (the answers' digests and their hints) live here only.
"""
from __future__ import annotations

from typing import Any

from gpudl.grading import Case, check_choice, lab04 as visible, rng
from gpudl.hardware import sm_limits

from ..references import lab04 as ref
from . import hidden

LAB = visible.LAB
_f32 = visible._f32


# --- 1. launch shape -----------------------------------------------------------------------------

@hidden(visible.launch_shape)
def launch_shape(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.launch_shape")
    cases = [Case((int(g.integers(1, 10**6)), int(g.choice([32, 64, 96, 128, 256, 512, 1024])))) for _ in range(8)]
    cases += [Case((1, 1024), label="n = 1"), Case((0, 128), label="n = 0: no blocks at all")]
    visible._compare_launch_shape(fn, cases, ref)


# --- 2. global index -------------------------------------------------------------------------------

@hidden(visible.global_index)
def global_index(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.global_index")
    cases = []
    for _ in range(10):
        bdim = tuple(int(v) for v in (g.integers(1, 33), g.integers(1, 9), g.integers(1, 5)))
        cases.append(Case((tuple(int(g.integers(0, 50)) for _ in range(3)), bdim,
                           tuple(int(g.integers(0, d)) for d in bdim))))
    visible._compare_global_index(fn, cases, ref)


# --- 3. to 7. the kernels ------------------------------------------------------------------------------

@hidden(visible.saxpy)
def saxpy(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.saxpy")
    cases = []
    for m in (64, 96, 128):
        n = int(g.integers(2 * m + 1, 12 * m))
        n += n % m == 0
        cases.append((float(g.normal()), _f32(g, n), _f32(g, n), m))
    visible._compare_saxpy(fn, cases, ref)
    if visible._gpu():
        g = rng(f"{LAB}.saxpy.large")
        n = int(g.integers(1 << 20, 1 << 21))
        visible._compare_saxpy_unchecked(fn, 1.5, _f32(g, n), _f32(g, n), 256)


@hidden(visible.add_bias)
def add_bias(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.add_bias")
    shapes = [(int(g.integers(17, 40)), int(g.integers(17, 50))) for _ in range(2)]
    visible._compare_add_bias(fn, [(_f32(g, r, c), _f32(g, c)) for r, c in shapes], ref)


@hidden(visible.stencil)
def stencil(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.stencil")
    sizes = [int(g.integers(130, 400)), int(g.integers(4, 60))]
    visible._compare_stencil(fn, [_f32(g, n) for n in sizes], ref)


@hidden(visible.matmul)
def matmul(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.matmul")
    shapes = [(int(g.integers(17, 30)), int(g.integers(17, 32)), int(g.integers(17, 30)))]
    visible._compare_matmul(fn, [(_f32(g, m, k), _f32(g, k, n)) for m, k, n in shapes], ref)


@hidden(visible.array_sum)
def array_sum(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.array_sum")
    sizes = [int(g.integers(300, 1500)), int(g.integers(2, 120))]
    visible._compare_array_sum(fn, [_f32(g, n) for n in sizes], ref)


# --- 8. occupancy --------------------------------------------------------------------------------

@hidden(visible.occupancy)
def occupancy(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.occupancy")
    cases = []
    while len(cases) < 8:
        name = str(g.choice(["V100", "T4", "A100", "RTX3090", "H100-SXM"]))
        lim = sm_limits(name)
        t = int(g.integers(1, lim.max_threads_per_block + 1))
        r = int(g.integers(8, 129))
        s = int(g.integers(1, 24 * 1024))
        occ = ref.occupancy(lim, t, r, s)
        if occ.blocks_per_sm == 0 or len(occ.limiters) > 1:
            continue                       # a launch that cannot run, or a tie: not this exercise
        cases.append(Case((lim, t, r, s), label=f"{name}: {t} threads, {r} registers, {s} bytes of shared memory"))
    visible._compare_occupancy(fn, cases, ref)


# --- 9. waves ----------------------------------------------------------------------------------------

@hidden(visible.waves)
def waves(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.waves")
    cases = [Case((int(g.integers(1, 20_000)), int(g.integers(1, 33)), int(g.choice([56, 80, 108, 114, 132]))))
             for _ in range(8)]
    visible._compare_waves(fn, cases, ref)


# --- 10. sectors -------------------------------------------------------------------------------------

@hidden(visible.sectors)
def sectors(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.sectors")
    cases = [Case((visible._warp(int(g.integers(1, 40)), int(b), int(g.integers(0, 64))), int(b)))
             for b in g.choice([1, 2, 4, 8], size=6)]
    cases.append(Case(([int(v) for v in g.integers(0, 1 << 16, size=32)], 4), label="32 scattered addresses"))
    visible._compare_sectors(fn, cases, ref)


# --- 11. bank conflicts --------------------------------------------------------------------------

@hidden(visible.bank_conflicts)
def bank_conflicts(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.bank_conflicts")
    cases = [Case(([int(v) * int(s) for v in range(32)],)) for s in g.integers(1, 70, size=5)]
    cases += [Case(([int(v) for v in g.integers(0, 256, size=32)],), label="32 random words")]
    visible._compare_bank_conflicts(fn, cases, ref)


# --- 12. questions -----------------------------------------------------------------------------------

_LIMITER_ANSWER = "affb7d9d3f857c5beeb58e08d7dffe1e"
_STRIDE_ANSWER = "3346c76e3764bbeb303b43e15a7e118e"


@hidden(visible.limiter_question)
def limiter_question(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _LIMITER_ANSWER, "compute each limit: 8 warps per block; 64 registers x 32 "
                 "= 2,048 per warp; 4,096 + 1,024 bytes of shared memory per block on an A100", question="limiter")


@hidden(visible.stride_question)
def stride_question(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _STRIDE_ANSWER, "how many 32-byte sectors does one warp's load touch at "
                 "stride 32, and how many of their bytes does it use?", question="stride")

