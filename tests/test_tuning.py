"""gpudl.tuning: the tuner warms up, keeps the fastest, caches per key; batching under a budget."""
from __future__ import annotations

import time

import pytest
import torch

from gpudl import gemm, timing, tuning as T
from gpudl_instructor.references import lab09 as ref      # lab 09's answers, kept by the instructor

CUDA = torch.cuda.is_available()


class FakeTimer:
    """Known medians per candidate; records which ran and with how much warm-up."""

    def __init__(self, medians):
        self.medians, self.calls = medians, []

    def __call__(self, fn, warmup, **_):
        name = fn()
        self.calls.append((name, warmup))
        return timing.Measurement((self.medians[name],) * 3, warmup=warmup)


def test_tuner_keeps_the_fastest_and_caches_per_key():
    timer = FakeTimer({"a": 3.0, "b": 1.0, "c": 2.0})
    tuner = T.Tuner(timer, warmup=3)
    cands = {n: (lambda n=n: n) for n in "abc"}
    r = tuner.tune((64, 64, 64), cands)
    assert r.best == "b" and not r.cached and dict(r.times) == {"a": 3.0, "b": 1.0, "c": 2.0}
    assert [c[0] for c in timer.calls] == ["a", "b", "c"] and {c[1] for c in timer.calls} == {3}
    again = tuner.tune((64, 64, 64), cands)
    assert again.cached and again.best == "b" and len(timer.calls) == 3          # nothing timed again
    other = tuner.tune((128, 64, 64), {"a": cands["a"], "c": cands["c"]})        # another shape: tuned anew
    assert other.best == "c" and not other.cached and len(timer.calls) == 5


def test_tuner_rejects_wrong_candidates_and_needs_a_warmup():
    timer = FakeTimer({"fast_wrong": 0.1, "ok": 1.0})

    def check(name, fn):
        if name == "fast_wrong":
            raise AssertionError("wrong result")

    r = T.Tuner(timer).tune("k", {"fast_wrong": lambda: "fast_wrong", "ok": lambda: "ok"}, check)
    assert r.best == "ok" and "wrong result" in r.rejected["fast_wrong"]
    with pytest.raises(ValueError, match="warm up"):
        T.Tuner(timer, warmup=0)
    with pytest.raises(ValueError):
        T.Tuner(timer).tune("k", {})


def test_the_default_timer_warms_up_past_a_slow_first_call():
    calls = {"compiles_slowly": 0}

    def compiles_slowly():                      # 50 ms the first time (compiling), then 1 ms
        calls["compiles_slowly"] += 1
        time.sleep(0.05 if calls["compiles_slowly"] == 1 else 0.001)

    def always_5ms():
        time.sleep(0.005)

    r = T.Tuner(warmup=1, budget_s=0.1, min_runs=3, device="cpu").tune("k", {"slow_first": compiles_slowly,
                                                                             "steady": always_5ms})
    assert r.best == "slow_first", r.times


def test_tune_gemm_times_checked_triton_tiles_per_shape():
    tuner = T.Tuner(warmup=1, budget_s=0.01, min_runs=1)
    configs = T.gemm_candidates("cpu")[1:3] if not CUDA else None
    r = T.tune_gemm(tuner, 40, 24, 32, configs=configs)
    assert r.best in r.times and not r.rejected and len(r.times) == len(configs or gemm.TRITON_CONFIGS)
    assert T.tune_gemm(tuner, 40, 24, 32, configs=configs).cached


def test_largest_batch_within_reads_the_budget_as_latency():
    batches, lat = [8, 1, 4, 2, 16], [0.030, 0.010, 0.020, 0.012, 0.060]
    assert ref.largest_batch_within(batches, lat, 1 / 30) == 8
    assert ref.largest_batch_within(batches, lat, 0.02) == 4                       # equal to the budget fits
    # per-frame time latency / batch is 1 / throughput; reading the budget that way would pick 16
    assert all(t / b <= 1 / 30 for b, t in zip(batches, lat))
    assert ref.largest_batch_within(batches, lat, 0.005) is None
    with pytest.raises(ValueError):
        ref.largest_batch_within([1, 2], [0.1])


def test_latency_at_a_throughput_is_the_lectures_answers():
    from gpudl_instructor.references.lab01 import batch_latency      # lab01's answer, kept by the instructor
    assert [round(batch_latency(30, b) * 1000) for b in (1, 2, 30, 60)] == [33, 67, 1000, 2000]


def test_batch_sweep_times_each_batch():
    model = torch.nn.Linear(8, 4)
    points = T.batch_sweep(model, lambda b: torch.randn(b, 8), [1, 4, 16], device="cpu", budget_s=0.01, progress=False)
    assert [p.batch for p in points] == [1, 4, 16]
    assert all(p.latency_s > 0 and p.throughput == pytest.approx(p.batch / p.latency_s) for p in points)
    with pytest.raises(ValueError):
        T.BatchPoint(0, 1.0)
