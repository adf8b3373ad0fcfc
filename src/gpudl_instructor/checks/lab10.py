"""The hidden cases of lab10_multi_gpu's checks (``gpudl.grading.lab10``).

Each draws its cases from the student's seed under the label it always had ("lab10.cost_models",
"lab10.ring_broadcast", "lab10.reduce_scatter", ...) and hands them to the visible check's
comparison, with the live references of ``gpudl_instructor.references.lab10`` in place of the
stored expected values: other sizes (not divisible by k), sources, chunk counts, world sizes of 3
and 4, random models, bucket caps and learning rates. The workers that run the student's code get
their cases as plain data (the inputs, a bucket plan the reference drew up here); nothing of this
package reaches them. The question's verdict (its answer's digest and hint) lives here only.
"""
from __future__ import annotations

from typing import Any

from gpudl.collectives import TrainConfig
from gpudl.grading import check_choice, lab10 as visible, rng

from ..references import lab10 as ref
from . import hidden

LAB = visible.LAB


# --- 1. cost models ---------------------------------------------------------------------------------

@hidden(visible.cost_models)
def cost_models(broadcast_time: Any, all_reduce_time: Any, bus_factor: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.cost_models")
    bc = [(float(g.integers(1, 10**9)), int(g.integers(2, 65)), float(g.uniform(5e9, 900e9)),
           int(g.integers(1, 500)), "") for _ in range(6)]
    ar = [(float(g.integers(1, 10**9)), int(g.integers(2, 65)), float(g.uniform(5e9, 900e9)),
           float(g.uniform(0, 2e-5))) for _ in range(6)]
    bus = [(str(c), int(g.integers(2, 65))) for c in g.choice(["all_reduce", "all_gather", "reduce_scatter",
                                                                "broadcast", "reduce"], size=6)]
    visible._compare_cost_models((broadcast_time, all_reduce_time, bus_factor), bc, ar, bus, ref)


# --- 2. the pipelined ring broadcast -------------------------------------------------------------------

@hidden(visible.ring_broadcast)
def ring_broadcast(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.ring_broadcast")
    specs = []
    for k in (3, 4):                       # 2 ranks: the visible cases
        for _ in range(2):
            n = int(g.integers(k, 60))
            specs.append((k, n, int(g.integers(k)), int(g.integers(1, min(n, 9) + 1))))
    visible._compare_ring_broadcast(fn, visible._broadcast_cases(g, specs), ref)


# --- 3-5. reduce-scatter, all-gather, all-reduce ------------------------------------------------------------

def _reduction(fn: Any, name: str) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.{name}")
    specs = [(k, int(g.integers(1, 80))) for k in (3, 4) for _ in range(3)]
    visible._compare_reduction(fn, name, visible._reduction_cases(name, g, specs), ref)


@hidden(visible.ring_reduce_scatter)
def ring_reduce_scatter(fn: Any) -> None:
    __tracebackhide__ = True
    _reduction(fn, "reduce_scatter")


@hidden(visible.ring_all_gather)
def ring_all_gather(fn: Any) -> None:
    __tracebackhide__ = True
    _reduction(fn, "all_gather")


@hidden(visible.ring_all_reduce)
def ring_all_reduce(fn: Any) -> None:
    __tracebackhide__ = True
    _reduction(fn, "all_reduce")


# --- 6. gradient buckets ---------------------------------------------------------------------------------

@hidden(visible.plan_buckets)
def plan_buckets(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.plan_buckets")
    cases = []
    for _ in range(6):
        sizes = [int(v) for v in g.integers(1, 5000, size=int(g.integers(1, 25)))]
        cases.append((sizes, int(g.integers(1, 8000)), ""))
    cases.append(([7, 3], 10, "a bucket that reaches the cap exactly"))
    visible._compare_plan_buckets(fn, [(sizes, cap, text, ref.plan_buckets(sizes, cap)) for sizes, cap, text in cases])


# --- 7. one data-parallel step --------------------------------------------------------------------------

@hidden(visible.data_parallel_step)
def data_parallel_step(fn: Any) -> None:
    __tracebackhide__ = True
    g = rng(f"{LAB}.data_parallel_step")
    configs = [(k, TrainConfig(widths=(int(g.integers(2, 9)), int(g.integers(4, 40)), int(g.integers(1, 6))),
                               batch=k * int(g.integers(1, 6)), steps=1, seed=int(g.integers(10**6)),
                               lr=float(g.uniform(0.01, 0.3)), bucket_mb=float(g.uniform(0.0002, 0.003))))
               for k in (2, 3, 4)]
    plans = [ref.plan_buckets(visible._param_bytes(cfg), max(1, int(cfg.bucket_mb * 2**20))) for _, cfg in configs]
    visible._compare_data_parallel_step(fn, configs, plans)


# --- 8. the question: the verdict (the visible check says only whether the answer is well-formed) -----

_BUCKETS = "4a95eb5eba644075906b687a8c3d548f"


@hidden(visible.question_buckets)
def question_buckets(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _BUCKETS, question="buckets",
                 hint="in which order does backward produce the gradients, and what can run while it does?")
