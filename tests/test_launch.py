"""gpudl._launch.fastest: the tuned kernels' autotuner, on fake timings (it needs no GPU to be judged)."""
from __future__ import annotations

import pytest
import torch
import triton.testing

from gpudl import _launch


class OutOfResources(Exception):
    pass


def _fake_gpu(monkeypatch, timings):
    """do_bench answers from ``timings[candidate]`` (a list, consumed in order); returns the launch log."""
    launched = []
    current = {}

    def run(c):
        launched.append(c)
        current["c"] = c
        if c == "too big":
            raise OutOfResources("out of resource: shared memory")
        if c == "broken":
            raise ValueError("a bug, not a tile that does not fit")

    def do_bench(fn, return_mode="median"):
        fn()
        return timings[current["c"]].pop(0)

    monkeypatch.setattr(triton.testing, "do_bench", do_bench)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    return run, launched


def test_finalists_are_judged_on_the_race_alone(monkeypatch):
    # "a" is timed first and looks fastest once (a boosted clock); in the race "b" is faster every turn
    timings = {"a": [1.0, 3.0, 3.1, 2.9, 3.0, 3.0], "b": [2.0, 2.0, 2.1, 1.9, 2.0, 2.0], "c": [2.5, 2.6, 2.4, 2.5, 2.5, 2.5], "d": [9.0]}
    run, launched = _fake_gpu(monkeypatch, timings)
    assert _launch.fastest(["a", "b", "c", "d"], run, warm_s=0.0) == "b"
    assert launched.count("d") == 1                                # timed once, never a finalist
    assert all(not v for k, v in timings.items() if k != "d")      # every finalist raced five turns


def test_the_first_candidate_warms_the_gpu_untimed(monkeypatch):
    timings = {"a": [1.0] * 6}
    run, launched = _fake_gpu(monkeypatch, timings)
    assert _launch.fastest(["a"], run, warm_s=0.02) == "a"
    assert launched.count("a") > 6                                 # warm-up runs besides the four timed ones


def test_tiles_that_do_not_fit_are_skipped_and_bugs_raised(monkeypatch):
    run, _ = _fake_gpu(monkeypatch, {"ok": [1.0] * 12})
    assert _launch.fastest(["too big", "ok"], run, warm_s=0.0) == "ok"
    with pytest.raises(ValueError, match="a bug"):
        _launch.fastest(["ok", "broken"], run, warm_s=0.0)
    with pytest.raises(RuntimeError, match="no candidate"):
        _launch.fastest(["too big"], run, warm_s=0.0)
