"""The hidden cases of lab08_precision_and_sparsity's checks (``gpudl.grading.lab08``).

Each draws its cases from the student's seed under the label it always had ("lab08.decode", ...)
and hands them to the visible check's comparison, with the live references of
``gpudl_instructor.references.lab08`` in place of torch's casts and the stored expected values:
other formats than torch has, every FP32 exponent, exact ties, other shapes. The questions'
verdicts (the answers' digests and their hints) live here only.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gpudl import formats
from gpudl.grading import Case, check_choice, lab08 as visible, rng

from ..references import lab08 as ref
from . import hidden

LAB = visible.LAB


# --- 1. decoding bit fields --------------------------------------------------------------------

def _pattern_classes(g: np.random.Generator, e: int, m: int, n: int) -> np.ndarray:
    """Bit patterns of every class: zeros, subnormals, normals, the largest, inf, NaN; both signs."""
    top = 2**e - 1
    exps = np.concatenate([np.zeros(n // 4, np.int64), g.integers(1, top, n // 2), np.full(n // 4, top)])
    mants = g.integers(0, 2**m, exps.size)
    mants[: 2] = 0
    signs = g.integers(0, 2, exps.size)
    edge = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2**m - 1], [0, 1, 0], [0, top - 1, 2**m - 1], [0, top, 0],
                     [1, top, 0], [0, top, 1], [1, 0, 0], [1, 1, 2**m - 1]], np.int64)
    s = np.concatenate([signs, edge[:, 0]])
    x = np.concatenate([exps, edge[:, 1]])
    mm = np.concatenate([mants, edge[:, 2]])
    return (s << (e + m)) | (x << m) | mm


@hidden(visible.decode_bits)
def decode_bits(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.decode")
    cases = [(np.arange(2**16), formats.FloatFormat("case", 5, 10), "every FP16 pattern")]
    for _ in range(4):
        e, m = int(g.integers(2, 9)), int(g.integers(1, 11))
        cases.append((_pattern_classes(g, e, m, 64), formats.FloatFormat("case", e, m),
                      f"a format with {e} exponent and {m} mantissa bits"))
    visible._compare_decode_bits(fn, cases, lambda bits, fmt: ref.decode(bits.astype(np.uint64), fmt))


# --- 2. format properties ----------------------------------------------------------------------

@hidden(visible.format_properties)
def format_properties(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.properties")
    pairs = [(11, 52), (5, 2)] + [(int(g.integers(3, 12)), int(g.integers(1, 30))) for _ in range(4)]
    visible._compare_format_properties(fn, [(Case((e, m), label=f"{e} exponent and {m} mantissa bits"),
                                             ref.format_properties(e, m)) for e, m in pairs])


# --- 3, 4. round to nearest even, bit for bit -----------------------------------------------------------

def _ties(fmt: formats.FloatFormat, g: np.random.Generator, n: int) -> np.ndarray:
    """Exact midpoints between neighbours of ``fmt`` (normal and subnormal), and the overflow tie."""
    v = ref.representable(fmt)
    pick = g.integers(0, v.size - 1, n)
    mids = (v[pick] + v[pick + 1]) / 2
    over = fmt.max + formats.spacing(fmt.max, fmt)[()] / 2
    return np.append(mids, over).astype(np.float32)


def _sweep(g: np.random.Generator, per_exponent: int) -> np.ndarray:
    e = np.repeat(np.arange(256, dtype=np.uint32), per_exponent)
    bits = (g.integers(0, 2, e.size).astype(np.uint32) << 31) | (e << 23) | g.integers(0, 2**23, e.size).astype(np.uint32)
    return bits.view(np.float32)


@hidden(visible.round_to_bf16)
def round_to_bf16(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.bf16")
    cases = [(_sweep(g, 16), "random values of every FP32 exponent"),
             (_ties(formats.BF16, g, 400), "exact ties between BF16 neighbours"),
             (np.concatenate([visible._NAN_CARRY, -np.abs(_ties(formats.BF16, g, 50))]), "NaNs and negative ties")]
    visible._compare_rounding(fn, formats.BF16, cases, "rounding to BF16", ref.encode)


@hidden(visible.round_to_fp16)
def round_to_fp16(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.fp16")
    sub = (g.random(200) * formats.FP16.min_normal).astype(np.float32)
    cases = [(_sweep(g, 16), "random values of every FP32 exponent"),
             (_ties(formats.FP16, g, 400), "exact ties between FP16 neighbours, subnormal ones too"),
             (np.concatenate([sub, -sub, visible._NAN_CARRY]), "random subnormals, both signs, and NaNs"),
             ((g.random(200) * 7e4 + 6e4).astype(np.float32), "values around the largest FP16, 65504")]
    visible._compare_rounding(fn, formats.FP16, cases, "rounding to FP16", ref.encode)


# --- 5. a matmul with a chosen input format and accumulator --------------------------------------------------

@hidden(visible.matmul_in_format)
def matmul_in_format(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.matmul")

    def normal(*shape):
        return g.standard_normal(shape).astype(np.float32)

    def positive(*shape):
        return g.random(shape).astype(np.float32)

    cases = []
    for inputs in ("fp32", "tf32", "fp16", "bf16"):
        k = int(g.integers(16, 200))
        cases.append(((normal(3, k), normal(k, 5), inputs, "fp32"), f"{inputs} inputs, FP32 accumulator, K = {k}"))
    k = int(g.integers(1500, 3000))
    cases.append(((positive(3, k), positive(k, 2), "bf16", "fp16"), f"BF16 inputs, FP16 accumulator, K = {k}"))
    cases.append(((normal(3, 40) * 100, normal(40, 2), "fp16", "fp16"), "FP16 accumulator, large values"))
    visible._compare_matmul_in_format(fn, cases, ref)


# --- 6. the dynamic loss scaler ---------------------------------------------------------------------------

@hidden(visible.scaler_step)
def scaler_step(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.scaler")
    n = int(g.integers(25, 40))
    overflows = {int(v) for v in g.choice(n, 6, replace=False)}
    visible._run_scaler(fn, visible._scaler_sequence(g, n, overflows), f"{n} steps, growth_interval=4, "
                        "growth_factor=4, backoff_factor=0.25", ref, growth_interval=4, growth_factor=4.0,
                        backoff_factor=0.25)
    start = int(g.integers(1990, 2000))
    overflow = int(g.integers(2, 8))
    visible._run_scaler(fn, visible._scaler_sequence(g, 12, {overflow}), f"torch's constants, starting {start} clean "
                        f"steps in, inf at step {overflow}", ref, start=start)


# --- 7, 8, 9, 10. 2:4 sparsity ---------------------------------------------------------------------------------

@hidden(visible.prune_2_4)
def prune_2_4(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.prune")
    cases = [Case((g.standard_normal((int(g.integers(2, 9)), 4 * int(g.integers(1, 9)))),)) for _ in range(4)]
    cases.append(Case((np.round(g.standard_normal((6, 12))),), label="rounded values: many ties and zeros"))
    cases.append(Case((g.standard_normal((8, 8)) - 3,), label="mostly negative values"))
    visible._compare_prune(fn, cases, ref)


@hidden(visible.compress_2_4)
def compress_2_4(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.compress")
    cases = [(ref.prune_2_4(g.standard_normal((int(g.integers(2, 7)), 4 * int(g.integers(2, 9))))),
              "a pruned matrix") for _ in range(3)]
    sparse = ref.prune_2_4(g.standard_normal((5, 16))) * (g.random((5, 16)) < 0.5)
    cases += [(sparse, "a pruned matrix with extra zeros"), (np.zeros((1, 4)), "a single empty group")]
    visible._compare_compress(fn, cases)


@hidden(visible.sparse_storage)
def sparse_storage(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.storage")
    cases = [(int(g.integers(1, 500)), 4 * int(g.integers(1, 300)), int(b)) for b in (4, 16, 32)]
    visible._compare_storage(fn, cases, ref)


@hidden(visible.sparse_matmul)
def sparse_matmul(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.spmm")
    shapes = [(int(g.integers(1, 9)), 4 * int(g.integers(1, 12)), int(g.integers(1, 9))) for _ in range(4)]
    cases = []
    for m, k, n in shapes:
        sp = ref.compress_2_4(ref.prune_2_4(g.standard_normal((m, k))))
        args = (sp.values, sp.indices.astype(np.int64), g.standard_normal((k, n)))
        cases.append((Case(args, label=f"A ({m}, {k}) compressed, B ({k}, {n})"), ref.sparse_matmul(*args)))
    visible._compare_sparse_matmul(fn, cases)


# --- 11. questions ----------------------------------------------------------------------------------------

_ANSWERS = {"tf32": "ee6874b5c3922b6963686a1e05440287", "amp": "b8d018662dc7cd00bb03141d46f9811c"}


@hidden(visible.tf32_loss_scaling)
def tf32_loss_scaling(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _ANSWERS["tf32"], "what decides whether a small gradient underflows: the "
                 "mantissa or the exponent? Compare TF32's exponent bits with FP16's and FP32's.", question="tf32")


@hidden(visible.amp_fp32_ops)
def amp_fp32_ops(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCDE", _ANSWERS["amp"], "the lecture sorts operations into those that can use 16 bits "
                 "(matrix products, most pointwise ones), those that need precision (reductions) and those that need "
                 "range (f(x) >> |x|, loss functions): more than one letter.", question="amp")
