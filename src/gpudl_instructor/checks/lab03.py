"""The hidden cases of lab03_gemm_blocking's checks (``gpudl.grading.lab03``).

Each draws its cases from the student's seed under the label it always had ("lab03.loop_order",
...) and hands them to the visible check's comparison: the GEMMs are judged against NumPy and
torch (and the watched reads, tile products, writes), the traffic formula and the block size
against the live references of ``gpudl_instructor.references.lab03``. The question's verdict
(the answers' digests and their hints) lives here only.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from gpudl import gemm
from gpudl.grading import Case, GradingError, answer_digest, lab03 as visible, rng
from gpudl.hardware import device

from ..references import lab03 as ref
from . import hidden

LAB = visible.LAB


# --- 1. loop orders -----------------------------------------------------------------------------

@hidden(visible.loop_order)
def loop_order(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.loop_order")
    shapes = [(int(g.integers(2, 6)), int(g.integers(2, 6)), int(g.integers(2, 6)), str(g.choice(gemm.LOOP_ORDERS)))
              for _ in range(6)] + [(1, 1, 1, "kji"), (4, 1, 3, "jki")]
    cases = []
    for m, n, k, order in shapes:
        A = g.standard_normal((m, k))
        B = g.standard_normal((k, n))
        cases.append((A, B, order))
    visible._compare_loop_order(fn, cases)


# --- 2. which loop order moves the least data ------------------------------------------------------

_BEST_ORDER = "77d8f05b3664da0b67cf9dfb1b2bd22f"
_WORST_ORDERS = "32ef56126583bdbe89fec5ce7a94c0b5"


@hidden(visible.traffic_question)
def traffic_question(best: Any, worst: Any) -> None:
    __tracebackhide__ = True
    best_order, worst_orders = visible.traffic_answers(best, worst)
    if answer_digest(LAB, best_order) != _BEST_ORDER:
        raise GradingError(f"{best_order!r} is not the order that moves the least data. Hint: with 8-word lines, "
                           "an inner loop that walks along a row uses every word of each line it fetches; run "
                           "gpudl.gemm.simulate_traffic(gemm.loop_trace(32, order), 256, 8) for each order")
    if answer_digest(LAB, ",".join(worst_orders)) != _WORST_ORDERS:
        raise GradingError(f"{worst_orders} are not the two orders that move the most data. Hint: which inner loop "
                           "walks down columns of row-major matrices, fetching a line for one word?")


# --- 3. blocked GEMM ------------------------------------------------------------------------------

@hidden(visible.blocked)
def blocked(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.blocked")
    shapes = []
    for _ in range(5):
        b = int(g.integers(2, 17))
        shapes.append((int(g.integers(1, 70)), int(g.integers(1, 70)), int(g.integers(1, 70)), b))
    shapes += [(7, 5, 6, 1), (10, 12, 9, 50), (1, 1, 1, 3), (40, 3, 64, 16)]
    cases = []
    for m, n, k, b in shapes:
        A = g.standard_normal((m, k))
        B = g.standard_normal((k, n))
        cases.append((A, B, b))
    visible._compare_blocked(fn, cases)


# --- 4. the traffic formula -------------------------------------------------------------------------

@hidden(visible.traffic)
def traffic(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.traffic")
    cases = []
    for _ in range(6):
        n = int(g.integers(2, 5000))
        cases.append(Case((n, int(g.integers(1, n)))))
    cases += [Case((100, 30), label="n=100, block=30: not a multiple, N = ceil(100/30) = 4"),
              Case((10, 64), label="a block larger than the matrix (one tile)"),
              Case((7, 1), label="block=1"), Case((1, 1), label="n=1")]
    visible._compare_traffic(fn, cases, ref)


# --- 5. the block that fits ---------------------------------------------------------------------------

@hidden(visible.block_size)
def block_size(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.block_size")
    cases = [Case((int(w),)) for w in np.exp(g.uniform(np.log(3), np.log(1e9), size=6)).astype(np.int64)]
    b = int(g.integers(20, 3000))
    cases += [Case((3 * b * b,), label=f"exactly three {b}x{b} tiles"),
              Case((3 * b * b - 1,), label=f"one word short of three {b}x{b} tiles"),
              Case((3,), label="3 words"), Case((11,), label="11 words")]
    visible._compare_block_size(fn, cases, ref)


# --- 6. the Triton kernel ---------------------------------------------------------------------------------

@hidden(visible.triton_matmul)
def triton_matmul(fn: Any) -> None:
    __tracebackhide__ = True
    seed = int(rng(f"{LAB}.triton.data").integers(2**31))
    g = rng(f"{LAB}.triton")
    cases = []
    for _ in range(3):
        tiles = tuple(int(t) for t in g.choice([16, 32], size=3))
        cases.append(dict(M=int(g.integers(17, 80)), N=int(g.integers(17, 80)), K=int(g.integers(1, 100)),
                          tiles=tiles, group=int(g.integers(1, 5)), data="normal", bt=bool(g.integers(0, 2))))
    cases.append(dict(M=int(g.integers(17, 50)), N=int(g.integers(17, 50)), K=int(g.integers(400, 600)),
                      tiles=(16, 16, 16), group=2, data="uniform", bt=False))
    cases.append(dict(M=1, N=1, K=1, tiles=(16, 16, 16), group=1, data="normal", bt=False))
    if device() == "cuda":
        cases.append(dict(M=int(g.integers(200, 700)), N=int(g.integers(200, 700)), K=int(g.integers(200, 900)),
                          tiles=(128, 64, 64), group=8, data="normal", bt=bool(g.integers(0, 2))))
    visible._compare_triton_matmul(fn, cases, seed=seed)


# --- 7. batched GEMM -----------------------------------------------------------------------------------

@hidden(visible.batched)
def batched(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.batched")
    shapes = [(int(g.integers(50, 300)), int(g.integers(1, 9)), int(g.integers(1, 9)), int(g.integers(1, 9)))
              for _ in range(4)] + [(64, 1, 1, 1), (40, 8, 16, 3)]
    cases = []
    for batch, m, k, n in shapes:
        A = g.standard_normal((batch, m, k))
        B = g.standard_normal((batch, k, n))
        cases.append((A, B))
    visible._compare_batched(fn, cases)
