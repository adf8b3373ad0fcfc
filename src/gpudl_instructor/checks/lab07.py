"""The hidden cases of lab07_attention's checks, drawn from the instructor's secret and judged
against the references (``gpudl_instructor.references.lab07``), with the comparisons (and
teaching messages) of the visible checks in ``gpudl.grading.lab07``.

The cases are those the course edition's checks drew before the split (the same ``rng`` labels,
the same draws), plus, for the kernel, its own launch as the lab's wrapper launches it.
``kernel_speed`` has no hidden half (its test cell runs the visible check only).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from gpudl.grading import Case, GradingError, answer_digest, assert_close, rng
from gpudl.grading import lab07 as visible

from ..references import lab07 as ref
from . import hidden

LAB = visible.LAB
_r = visible._r


@hidden(visible.softmax)
def softmax(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.softmax")
    cases = []
    for shape in ((5, 5), (3, 4, 6), (2, 7), (4, 3, 3)):
        x = _r(g, *shape, scale=3.0)
        for axis in {int(g.integers(-len(shape), len(shape))), -1, 0}:
            cases.append(Case((x,), {"axis": axis}))
    offsets = np.array([[800.0], [-800.0], [0.0], [300.0]])
    cases.append(Case((_r(g, 4, 6) + offsets,), label="rows near +800, -800, 0 and 300 (one max per row!)"))
    cases.append(Case((_r(g, 6, 1),), {"axis": -1}, label="a (6, 1) matrix: one entry per row"))
    visible._compare_softmax(fn, cases, ref.softmax)


def _sdpa(q: Any, k: Any, v: Any, mask: Any = None, causal: bool = False) -> np.ndarray:
    return ref.scaled_dot_product_attention(q, k, v, mask=mask, causal=causal)


@hidden(visible.scaled_dot_product_attention)
def scaled_dot_product_attention(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.sdpa")
    b, h = int(g.integers(1, 4)), int(g.integers(1, 4))
    lq, lk, d = int(g.integers(2, 12)), int(g.integers(2, 12)), int(g.choice([16, 32, 64]))
    mask = g.random((b, h, lq, lk)) < 0.6
    mask[0, 0, int(g.integers(lq))] = False
    cases = [Case((_r(g, b, h, lq, d), _r(g, b, h, lk, d), _r(g, b, h, lk, 5)), label=f"batch ({b}, {h}), d={d}"),
             Case((_r(g, b, h, lq, d), _r(g, b, h, lk, d), _r(g, b, h, lk, 5)), {"mask": mask},
                  label="a random mask with a fully masked row"),
             Case((_r(g, 6, 8), _r(g, 9, 8), _r(g, 9, 4)), {"causal": True}, label="causal, 6 queries, 9 keys"),
             Case((_r(g, 9, 8), _r(g, 6, 8), _r(g, 6, 4)), {"causal": True}, label="causal, 9 queries, 6 keys"),
             Case((_r(g, 7, 8), _r(g, 7, 8), _r(g, 7, 4)), {"causal": True, "mask": g.random((7, 7)) < 0.7},
                  label="causal and a mask together"),
             Case((_r(g, 1, 16), _r(g, 5, 16), _r(g, 5, 2)), {"causal": True}, label="a single query, causal")]
    visible._compare_sdpa(fn, cases, _sdpa)


def _mhsa(x: Any, w_q: Any, w_k: Any, w_v: Any, w_o: Any, heads: int, causal: bool = False) -> np.ndarray:
    return ref.multihead_self_attention(x, w_q, w_k, w_v, w_o, heads, causal=causal)


@hidden(visible.multihead_self_attention)
def multihead_self_attention(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.mhsa")
    case = visible._mhsa_case
    cases = [case(g, (2, 7, 12), 12, 12, 12, int(g.choice([2, 3, 4])), False),
             case(g, (3, 6, 8), 8, 8, 8, 4, True),
             case(g, (9, 6), 8, 4, 5, 2, bool(g.integers(0, 2)), label="D_x=6, D_Q=8, D_V=4, D_out=5, 2 heads"),
             case(g, (4, 8), 8, 8, 8, 1, False, label="a single head"),
             case(g, (2, 1, 8), 8, 8, 8, 2, True, label="one token")]
    visible._compare_mhsa(fn, cases, _mhsa)


@hidden(visible.online_softmax_merge)
def online_softmax_merge(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.merge")
    big = np.zeros((4, 2), bool)
    big[int(g.integers(4)), int(g.integers(2))] = True
    split = visible._split_scores
    scores = [(split(g, 4, (int(g.integers(1, 9)), int(g.integers(1, 9))), 3, spread=30.0),
               "scores spread over +-100 (exp(m_a - m_b) is tiny or huge)"),
              (split(g, 4, (5, 3), 3, hide=big), "one row has a fully masked block"),
              (split(g, 1, (1, 1), 1), "one row, blocks of one key"),
              (split(g, 2, (3, 3), 2, hide=np.array([[True, True], [True, False]])),
               "row 0 masked in both blocks: it must stay (-inf, 0, 0), with no NaN")]
    cases = [visible._merge_case(s, v, cut, ref.softmax_block_state, label) for (s, v, cut), label in scores]
    visible._compare_merge(fn, [(c, ref.online_softmax_merge(*c.args)) for c in cases])


def _attention(q: Any, k: Any, v: Any, causal: bool = False) -> np.ndarray:
    return ref.scaled_dot_product_attention(q, k, v, causal=causal)


@hidden(visible.tiled_attention)
def tiled_attention(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.tiled")
    lq, lk = int(g.integers(20, 60)), int(g.integers(20, 60))
    cases = [Case((_r(g, lq, 8), _r(g, lk, 8), _r(g, lk, 5), int(g.choice([8, 16]))), label=f"Lq={lq}, Lk={lk}"),
             Case((_r(g, lq, 8), _r(g, lk, 8), _r(g, lk, 5), 16), {"causal": True}, label=f"causal, Lq={lq}, Lk={lk}"),
             Case((_r(g, 48, 8), _r(g, 48, 8), _r(g, 48, 8), 16), {"causal": True}, label="L=48, block 16, causal"),
             Case((_r(g, 5, 4), _r(g, 9, 4), _r(g, 9, 4), 16), label="fewer keys than one block"),
             Case((_r(g, 7, 4), _r(g, 7, 4), _r(g, 7, 4), 1), {"causal": True}, label="block 1, causal"),
             Case((_r(g, 12, 8), _r(g, 8, 8), _r(g, 8, 8), 4), {"causal": True}, label="causal, 12 queries, 8 keys")]
    visible._compare_tiled(fn, cases, _attention)
    visible._check_tiled_memory(fn, 2048, lambda q, k, v: ref.flash_attention(q, k, v, 64))


@hidden(visible.attention_flops)
def attention_flops(fn: Callable) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.flops")
    cases = [Case(tuple(int(x) for x in (g.integers(1, 9), g.integers(1, 33), g.integers(1, 3000),
                                         g.integers(1, 3000), g.choice([32, 64, 128]))), {"causal": c})
             for c in (False, True, True)]
    cases += [Case((2, 3, 10, 4, 8), {"causal": True}, label="causal with more queries than keys"),
              Case((1, 1, 1, 1, 1), {"causal": True})]
    visible._compare_flops(fn, cases, ref)


# sha256 of "gpudl-lab07:NAIVE,TILED" (answer_digest) for the right whole factors
_GROWTH = "c3c3cbe5a18996e66f5051ccc9895c4c"
_SCORES_GIB = 8 * 16 * 16384 * 16384 * 2 / 2**30


@hidden(visible.memory_questions)
def memory_questions(growth: Any, scores_gib: Any) -> None:
    __tracebackhide__ = True
    naive, tiled = visible._growth_pair(growth)
    if answer_digest(LAB, f"{round(naive)},{round(tiled)}") != _GROWTH:
        raise GradingError(f"MEMORY_GROWTH = {growth!r} is not it. Look at your plot's slopes on log-log axes: "
                           "a line of slope p means memory grows like L^p, so doubling L multiplies it by 2^p.")
    assert_close(scores_gib, _SCORES_GIB, rtol=1e-3, atol=0.0, name="SCORES_GIB",
                 hints={2**30 / 1e9: "a factor of 1.07: GiB is 2^30 bytes, GB is 10^9",
                        1e9 / 2**30: "a factor of 0.93: GiB is 2^30 bytes, GB is 10^9",
                        2.0: "a factor of 2: FP16 is 2 bytes per score", 0.5: "a factor of 1/2: FP16 is 2 bytes per score"})


def _kernel_reference(q: Any, k: Any, v: Any, causal: bool = False) -> np.ndarray:
    np_args = [t.detach().double().cpu().numpy() for t in (q, k, v)]
    return ref.scaled_dot_product_attention(*np_args, causal=causal)


@hidden(visible.attention_kernel)
def attention_kernel(wrapper: Callable, kernel: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.kernel")
    # lengths of 1 to 3 of the lab's key blocks (16 in the interpreter, 64 on a GPU): every length but the
    # first case's crosses a block boundary, so the online softmax's rescaling is exercised on both
    b = visible._block()
    n = int(g.integers(b + 1, 3 * b))
    shapes = [(3, n, n, 16, True), (1, b, b, 32, True), (2, b + 4, 3 * b - 3, 16, True),
              (2, 3 * b - 3, b + 4, 16, True), (1, 1, 1, 16, False), (2, n, int(g.integers(b + 1, 3 * b)), 16, False)]
    visible._compare_kernel(wrapper, kernel, visible._torch_cases(g, shapes, "fp32"), _kernel_reference)
