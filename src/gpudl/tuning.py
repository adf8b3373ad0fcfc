"""Auto-tuning and batching: choose by measuring on the device, and trade latency for throughput.

TensorRT's *kernel auto-tuning* ("tactic selection") runs every candidate implementation of a
layer on the target GPU, keeps the fastest, and stores the choice in the engine; Triton's
``@triton.autotune`` does the same for a kernel's tile sizes, keyed on the problem's shape;
cuDNN's find-algorithm (Unit 05) for convolutions. The recipe is always

    for each candidate: warm up (compile, allocate, load), then time several runs
    keep the one with the smallest median, remember it for this shape
    next time this shape comes, use the remembered choice without timing again

Timing without the warm-up charges the first run's compilation to a candidate and picks the
wrong one; a cache keyed on less than the shape reuses one shape's winner for another.

Batching trades the other way: a batch of B frames takes longer than one frame, but less than
B times as long (the GPU is busier), so throughput B / latency(B) grows with B while every
frame of the batch waits for the whole batch. The lecture's 30 FPS question: at 30 frames per
second, a batch of 2 means 66 ms of latency. Under a latency budget (33 ms for one frame per
frame at 30 FPS) the best batch is the largest one whose *latency* fits.

Public names, in reading order:

``TuneResult``, ``Tuner``       time candidates with warm-up (``gpudl.timing.measure``), keep the
                                fastest per key, reuse the cached winner
``gemm_candidates``, ``tune_gemm``   Unit 03's Triton GEMM tile shapes as candidates, tuned
                                per (M, N, K, dtype)
``BatchPoint``, ``batch_sweep``  latency and throughput of a model against batch size
``LATENCY_BUDGET_30FPS``       the lecture's budget: one frame every 33 ms (Lab 09 picks the
                                largest batch whose latency meets a budget)
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence



@dataclass(frozen=True)
class TuneResult:
    """What the tuner chose for ``key``: the best candidate's name, every candidate's median
    time in seconds (empty when the choice came from the cache), and whether it did."""

    key: Any
    best: str
    times: Mapping[str, float] = field(default_factory=dict)
    cached: bool = False
    rejected: Mapping[str, str] = field(default_factory=dict)


class Tuner:
    """Choose among candidates by timing them on this device, once per key.

    ``timer(fn) -> Measurement`` defaults to ``gpudl.timing.measure`` (warm-up, then CUDA events
    on a GPU or ``perf_counter`` on a CPU), called with ``warmup`` and ``budget_s``.
    ``check(name, fn)`` may reject a candidate before it is timed (a wrong result, an
    unsupported shape) by raising; the reason is kept in ``TuneResult.rejected``."""

    def __init__(self, timer: Callable[..., Any] | None = None, *, warmup: int = 2, budget_s: float = 0.5,
                 min_runs: int = 5, device: str | None = None):
        if warmup < 1:
            raise ValueError(f"warm up at least once (first calls compile and allocate), got warmup={warmup}")
        self.timer, self.warmup, self.budget_s, self.device = timer, warmup, budget_s, device
        self.min_runs = min_runs
        self.cache: dict[Hashable, TuneResult] = {}
        self.timed: list[tuple[Hashable, str]] = []          # every (key, candidate) that was timed

    def _measure(self, fn: Callable[[], Any]) -> float:
        if self.timer is not None:
            return self.timer(fn, warmup=self.warmup, budget_s=self.budget_s, min_runs=self.min_runs).median
        from . import timing

        return timing.measure(fn, self.device, warmup=self.warmup, budget_s=self.budget_s,
                             min_runs=self.min_runs).median

    def tune(self, key: Hashable, candidates: Mapping[str, Callable[[], Any]],
             check: Callable[[str, Callable[[], Any]], None] | None = None) -> TuneResult:
        if key in self.cache:
            hit = self.cache[key]
            return TuneResult(key, hit.best, {}, True, hit.rejected)
        if not candidates:
            raise ValueError("no candidates to tune")
        times, rejected = {}, {}
        for name, fn in candidates.items():
            if check is not None:
                try:
                    check(name, fn)
                except Exception as exc:  # noqa: BLE001 - a failing candidate is reported, not fatal
                    rejected[name] = f"{type(exc).__name__}: {exc}"
                    continue
            times[name] = self._measure(fn)
            self.timed.append((key, name))
        if not times:
            raise RuntimeError(f"every candidate failed for {key!r}: {rejected}")
        best = min(times, key=lambda n: (times[n], list(candidates).index(n)))
        result = TuneResult(key, best, times, False, rejected)
        self.cache[key] = result
        return result


# --- Triton GEMM tiles --------------------------------------------------------------------------------

def gemm_candidates(device: str) -> list[Any]:
    """Tile shapes to try: Unit 03's autotuning list on a GPU; a few small tiles in the
    interpreter (where every program runs in Python, so this is a demonstration, not a speed)."""
    from .gemm import TRITON_CONFIGS, TritonConfig

    if str(device).startswith("cuda"):
        return list(TRITON_CONFIGS)
    return [TritonConfig(16, 16, 16, 4, num_warps=4, num_stages=1), TritonConfig(32, 32, 32, 4, num_warps=4, num_stages=1),
            TritonConfig(64, 64, 32, 4, num_warps=4, num_stages=1), TritonConfig(32, 64, 64, 4, num_warps=4, num_stages=1)]


def tune_gemm(tuner: Tuner, m: int, n: int, k: int, dtype: Any = None, *, device: str | None = None,
              configs: Sequence[Any] | None = None, seed: int = 0) -> TuneResult:
    """Tune ``gpudl.gemm.matmul_triton``'s tiles for an (m, k) x (k, n) product on ``device``,
    keyed on (m, n, k, dtype). Each candidate's result is checked against ``torch.matmul``
    before it is timed: a fast wrong tile is rejected, not chosen."""
    import torch

    from . import gemm, hardware
    from .grading import assert_close

    dev = device or hardware.device()
    dtype = dtype or (torch.float16 if str(dev).startswith("cuda") else torch.float32)
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g).to(dev, dtype)
    b = torch.randn(k, n, generator=g).to(dev, dtype)
    expected = (a.float() @ b.float())
    cands = {cfg.label + f"/w{cfg.num_warps}s{cfg.num_stages}": (lambda cfg=cfg: gemm.matmul_triton(a, b, config=cfg))
             for cfg in (configs or gemm_candidates(dev))}

    def check(name: str, fn: Callable[[], Any]) -> None:
        assert_close(fn().float(), expected, dtype=str(dtype).removeprefix("torch."), k=k, name=f"tile {name}")

    return tuner.tune((m, n, k, str(dtype)), cands, check)


# --- batching ----------------------------------------------------------------------------------------

LATENCY_BUDGET_30FPS = 1 / 30          # seconds: one frame every 33 ms


@dataclass(frozen=True)
class BatchPoint:
    """One batch size: the median time of one batch (the latency every frame in it sees) and
    the frames per second it sustains."""

    batch: int
    latency_s: float

    def __post_init__(self) -> None:
        if self.batch < 1 or not (self.latency_s > 0 and math.isfinite(self.latency_s)):
            raise ValueError(f"need batch >= 1 and a positive latency, got {self.batch}, {self.latency_s}")

    @property
    def throughput(self) -> float:
        return self.batch / self.latency_s


def batch_sweep(model: Callable[[Any], Any], make_input: Callable[[int], Any], batches: Sequence[int], *,
                device: str | None = None, budget_s: float = 0.3, progress: bool = True) -> list[BatchPoint]:
    """Time ``model(make_input(b))`` for each batch size ``b`` with ``gpudl.timing.measure`` (inputs
    made before timing; inference under ``torch.no_grad``)."""
    import torch

    from . import hardware, timing

    from tqdm.auto import tqdm

    from .grading import grading_active

    dev = device or hardware.device()
    points = []
    with torch.no_grad(), tqdm(total=len(batches), desc="batch sweep", disable=not progress or grading_active() or
                               not sys.stderr.isatty(), leave=False) as bar:
        for b in batches:
            x = make_input(int(b))
            m = timing.measure(lambda: model(x), dev, budget_s=budget_s, what=f"batch {b}")
            points.append(BatchPoint(int(b), m.median))
            bar.update()
    return points

