"""C = A @ B: gpudl's median next to triton's do_bench and torch's Timer, TFLOP/s, fraction of peak.

On a GPU: torch.matmul at 4096^3 and 8192^3 (``--quick``: 1024^3 and 2048^3) in FP32, TF32,
FP16 and BF16, the three timers taking turns round after round so that clock drift reaches
them alike, and the host's time per call (``host_time``: how soon ``torch.matmul`` returns). On
a CPU: numpy.matmul and torch.matmul against torch's Timer (do_bench needs a GPU). The timers are
``gpudl.timing``'s, the TF32 switch ``gpudl.bench``'s; a matmul of n x n matrices is 2 n^3 FLOPs.

A last row on a GPU (``LECTURE_TIMER``) times the lecture's way (LAB 2 Problem 4 of "DNN computing
on GPU"): ``time.time()`` read before and after one 6000^3 FP32 call, with no synchronisation, so
the clock measures the call's return, not the product, and the rate it implies is impossible
(``lecture_timer``; lecture 02 quotes it from the record).
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable, Sequence

from ..bench import allow_tf32, torch_dtype
from ..table import Table
from ..timing import Measurement, check_plausible, host_time, time_cpu, time_cuda


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", type=int, nargs="+", help="square sizes n (default: 4096 8192 on a GPU)")
    p.add_argument("--dtypes", nargs="+", default=None, help="GPU dtypes (default: fp32 tf32 fp16 bf16)")
    p.add_argument("--rounds", type=int, default=None,
                   help="interleaved rounds of the timers (default: 11 on a GPU, 1 with --quick)")


def _do_bench_median(stmt: Callable[[], Any]) -> float:
    """triton.testing.do_bench's median in seconds."""
    import triton.testing

    return triton.testing.do_bench(stmt, return_mode="median") / 1e3     # ms -> s


def _timer_median(globals_: dict[str, Any], stmt_text: str, cuda: bool) -> float:
    """torch.utils.benchmark.Timer's blocked_autorange median in seconds."""
    from torch.utils.benchmark import Timer

    return Timer(stmt=stmt_text, globals=globals_).blocked_autorange(min_run_time=0.2 if cuda else 0.5).median



LECTURE_TIMER = "the lecture's timer: time.time() around one call"
LECTURE_N = 6000


def lecture_timer(n: int = LECTURE_N, trials: int = 5) -> float:
    """Seconds between ``time.time()`` read before and after one n^3 FP32 ``torch.matmul`` on the
    GPU with nothing waiting for it, as the lecture's code reads them: the median of ``trials``, each
    after cuBLAS has run the product once and the GPU has gone idle."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=g)     # (n, n)
    b = torch.randn(n, n, device="cuda", generator=g)     # (n, n)
    seconds = []
    with allow_tf32(False):
        for _ in range(trials):
            torch.matmul(a, b)
            torch.cuda.synchronize()
            t0 = time.time()
            torch.matmul(a, b)
            t1 = time.time()
            torch.cuda.synchronize()
            seconds.append(t1 - t0)
    return statistics.median(seconds)


def run(args: argparse.Namespace) -> Table:
    import numpy as np
    import torch

    from .. import hardware

    dev = hardware.device()
    cuda = dev == "cuda"
    if args.sizes:
        sizes = args.sizes
    elif cuda:
        sizes = [1024, 2048] if args.quick else [4096, 8192]
    else:
        sizes = [256, 512] if args.quick else [1024, 2048]
    table = Table(f"matmul C = A @ B on {'the GPU' if cuda else 'the CPU'}: gpudl vs do_bench vs torch Timer")

    def spread(values: Sequence[float]) -> float | None:
        """(max - min) / median over the rounds, in %: how far one timer disagrees with itself."""
        return 100.0 * (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else None

    def row(impl: str, dt: str, n: int, ours: Measurement, db: float | None, tm: float | None,
            peak: float | None, median: float | None = None) -> dict[str, Any]:
        median = ours.median if median is None else median
        rate = 2 * n ** 3 / median
        r: dict[str, Any] = {"impl": impl, "dtype": dt, "n": n, "gpudl ms": median * 1e3, "runs": ours.count,
                             "do_bench ms": None if db is None else db * 1e3,
                             "Timer ms": None if tm is None else tm * 1e3,
                             "gpudl/do_bench": None if db is None else median / db,
                             "gpudl/Timer": None if tm is None else median / tm,
                             "TFLOP/s": rate / 1e12, "of peak": None if peak is None else rate / peak}
        return r

    if cuda:
        spec = hardware.detect()
        dtypes = [hardware.normalize_dtype(d) for d in (args.dtypes or ("fp32", "tf32", "fp16", "bf16"))]
        rounds = args.rounds or (1 if args.quick else 11)
        settle_s = 0.2 if args.quick else 1.0
        for dt in dtypes:
            for n in sizes:
                g = torch.Generator(device="cuda").manual_seed(0)
                a = torch.randn(n, n, device="cuda", generator=g).to(torch_dtype(dt))   # (n, n)
                b = torch.randn(n, n, device="cuda", generator=g).to(torch_dtype(dt))   # (n, n)
                with allow_tf32(dt == "tf32"):
                    fn = lambda: torch.matmul(a, b)   # noqa: E731 - the one operation all three timers time
                    # A GPU's clock follows its power and heat, by more than 2% on a 4096^3 tensor-core
                    # matmul, over seconds and after whatever ran just before: on an H200, do_bench
                    # right after torch's Timer (back-to-back matmuls, no flush) read 3-4% slower than
                    # do_bench right after do_bench. So: settle under load first, and put the same
                    # short load before every timer; the timers take turns, each starting a round
                    # in turn, so drift reaches all alike.
                    def settle(seconds: float) -> None:
                        t0 = time.perf_counter()
                        while time.perf_counter() - t0 < seconds:
                            fn()
                            torch.cuda.synchronize()

                    settle(settle_s)
                    rounds_ours: list[Measurement] = []
                    dbs: list[float] = []
                    dbs2: list[float] = []      # do_bench again: how well do_bench agrees with itself
                    tms: list[float] = []
                    glb = {"torch": torch, "a": a, "b": b}
                    timers = [lambda: rounds_ours.append(time_cuda(fn, what=f"{n}^3 {dt}")),
                              lambda: dbs.append(_do_bench_median(fn)),
                              lambda: tms.append(_timer_median(glb, "torch.matmul(a, b)", cuda=True)),
                              lambda: dbs2.append(_do_bench_median(fn))]
                    for r in range(rounds):
                        for timer in timers[r % 4:] + timers[:r % 4]:
                            settle(settle_s / 10)
                            timer()
                    # One statistic for all three: the median over rounds of each round's median.
                    ours_median = statistics.median(m.median for m in rounds_ours)
                    ours = Measurement(tuple(t for m in rounds_ours for t in m.times), what=f"{n}^3 {dt}",
                                       device="cuda", method="cuda events + L2 flush")
                    db, tm = statistics.median(dbs), statistics.median(tms)
                try:
                    peak = hardware.peak_flops(spec, dt) if spec is not None else None
                except ValueError:
                    peak = None
                if peak is not None:
                    check_plausible(2 * n ** 3 / ours_median, peak, what=f"{n}^3 {dt} matmul")
                r = row("torch.matmul", dt, n, ours, db, tm, peak, ours_median)
                r["paired"] = statistics.median(m.median / d for m, d in zip(rounds_ours, dbs))
                r["within 2%"] = "yes" if abs(r["paired"] - 1) <= 0.02 else "NO"
                r["do_bench/do_bench"] = statistics.median(dbs2) / db
                r["gpudl spread %"] = spread([m.median for m in rounds_ours])
                r["do_bench spread %"] = spread(dbs)
                with allow_tf32(dt == "tf32"):
                    seconds = host_time(fn)
                r["host us/call"] = None if seconds is None else seconds * 1e6
                table.rows.append(r)
                del a, b
        seconds = lecture_timer()
        peak = hardware.peak_flops(spec, "fp32") if spec is not None else None
        rate = 2 * LECTURE_N ** 3 / seconds
        table.rows.append({"impl": LECTURE_TIMER, "dtype": "fp32", "n": LECTURE_N, "TFLOP/s": rate / 1e12,
                           "of peak": None if peak is None else rate / peak, "host us/call": seconds * 1e6})
        table.notes.append(f"{spec.name if spec else 'unknown GPU'}: peaks from gpudl.hardware (dense). gpudl: CUDA "
                           "events, L2 flushed before each run; do_bench: return_mode='median' "
                           "(it flushes L2 too); torch Timer: blocked_autorange median, no L2 flush. After "
                           f"{settle_s:g} s under load, the timers take turns for {rounds} round(s), each starting a "
                           f"round in turn and each after the same {settle_s * 100:g} ms of the matmul; each figure is the median over rounds of that timer's per-round median, so "
                           "clock drift reaches all alike. 'paired' is the median over rounds of each round's ratio "
                           "gpudl/do_bench (timed within a second or two of each other); 'within 2%' judges it. "
                           "'do_bench/do_bench' times do_bench a second time each round against the first: the "
                           "disagreement of a timer with itself. 'spread %' is (max - min) / median of a timer's "
                           "per-round medians. 'host us/call': the host's time per torch.matmul call while the "
                           "GPU is busy (launches queued, nothing waits; gpudl.timing.host_time): what the call "
                           "costs the program before it returns. The last row is the lecture's timer: "
                           "time.time() around one call, nothing synchronised (the median of 5), and the rate "
                           "that time implies.")
    else:
        for n in sizes:
            g = np.random.default_rng(0)
            an = g.standard_normal((n, n), dtype=np.float32)   # (n, n)
            bn = g.standard_normal((n, n), dtype=np.float32)   # (n, n)
            at, bt = torch.from_numpy(an), torch.from_numpy(bn)
            for impl, fn, glb, text in (
                    ("numpy.matmul", lambda: np.matmul(an, bn), {"np": np, "a": an, "b": bn}, "np.matmul(a, b)"),
                    ("torch.matmul", lambda: torch.matmul(at, bt), {"torch": torch, "a": at, "b": bt},
                     "torch.matmul(a, b)")):
                ours = time_cpu(fn, budget_s=1.0, what=f"{impl} {n}^3 fp32")
                tm = _timer_median(glb, text, cuda=False)
                table.rows.append(row(impl, "fp32", n, ours, None, tm, None))
        table.notes.append(f"CPU only ({torch.get_num_threads()} torch threads): gpudl has no CPU peak, so no fraction "
                           "of peak; triton.testing.do_bench needs a GPU. On a GPU this table has torch.matmul rows "
                           "for fp32, tf32, fp16 and bf16 at 4096 and 8192 with do_bench beside gpudl.")
    return table
