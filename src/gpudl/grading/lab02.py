"""Checks for lab02_matmul_flops: the visible cases. The hidden ones (the instructor's cases, drawn
from the student's seed) are ``gpudl_instructor.checks.lab02``: they reuse the comparisons here
(``_compare_NAME``), so every teaching message. Where the expected values come from:

- the FLOP count, the fraction of peak, the regime: the values stored at release (``expected``);
- the timers: work of known cost (``_SleepWork`` on the CPU: a slow first call, a slow call now
  and then; ``gpudl.bench.SimulatedGPU``: asynchronous work, so a timer that does not synchronise
  sees only the launch), timed in the same run by ``gpudl.timing``, which the exercises forbid;
  on a GPU also a real matmul against ``gpudl.timing.time_cuda``;
- TFLOP/s: the simulated device's rate (its n^3 matmul takes exactly 2 n^3 / rate); on a GPU,
  torch.matmul timed by ``gpudl.timing.time_cuda`` in the same run;
- the sweep and the plot: a fake ``measure``, the data handed to the plot;
- the questions: the visible check says only whether the answer is well-formed.

A timer can only be watched where it runs: the student's code, its work, the fake ``measure`` and
the tqdm bars live in the student's process, in the ``@student_side`` adapters, which return plain
data (the figure, the calls, whether the device was idle, what the simulated device ran, TF32
afterwards). The reference timings and every verdict stay in the check.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as np

from .. import bench, hardware
from ..timing import _fmt_time as _fmt
from . import (Case, GradingError, assert_close, assert_equal, check_cases, choice_letters, draw, exercise, question, quiet,
               ratio_hint, run_student, student_side)
from .boundary import AxesSnapshot, timed
from .expected import expected
from .judging import judge_ratio

LAB = "lab02"

# A figure agrees with gpudl's on the same work when their ratio is within this band.
LOW, HIGH = 0.75, 1.4
# A rate whose median ratio to gpudl's lies outside [SURE, 1 / SURE] is wrong (a factor of 2, 1e3, TF32 for
# FP32 are all far outside); between that and the band the measurement is inconclusive (a busy or
# boosting device): it is measured again, up to RATE_ATTEMPTS times, and never failed for it.
SURE = 0.6
RATE_ROUNDS, RATE_ATTEMPTS = 3, 3

# gpudl's own timers, forbidden by name: the guard then notices a call of them from anywhere (a
# course tool built on them too) while the student's timer runs.
_TIMER_FORBID = ("gpudl.timing.time_cpu", "gpudl.timing.time_cuda", "gpudl.timing.measure", "triton.testing.do_bench",
                 "timeit.repeat", "timeit.timeit", "timeit.Timer", "torch.utils.benchmark.Timer")


def _plain_number(value: Any) -> Any:
    """(Student side) a timer's or rate's result as it crosses: a float, or what it is instead."""
    if isinstance(value, (int, float)):
        return float(value)
    text = repr(value)
    out = {"type": type(value).__name__, "repr": text if len(text) <= 120 else text[:117] + "...",
           "has_median": value is not None and hasattr(value, "median")}
    if value is not None and not out["has_median"]:
        try:
            out["float"] = float(value)
        except (TypeError, ValueError):
            pass
    return out


def _as_float(value: Any, what: str, returns: str = "the median time in seconds") -> float:
    """A result as ``_plain_number`` sent it, as a float, or a message that says what it is instead."""
    __tracebackhide__ = True
    if isinstance(value, dict):
        if value["type"] == "NoneType":
            raise GradingError(f"{what} returned None: did you forget a `return`?")
        if value["has_median"] or "float" not in value:
            shown = f"a {value['type']}" if value["has_median"] else value["repr"]
            raise GradingError(f"{what} returned {shown}; return {returns}, a float")
        value = value["float"]
    return float(value)


def _as_seconds(value: Any, what: str) -> float:
    __tracebackhide__ = True
    seconds = _as_float(value, what)
    if not math.isfinite(seconds) or seconds < 0:
        raise GradingError(f"{what} returned {seconds!r}; a time is finite and non-negative")
    return seconds


# --- 1. the FLOP count ------------------------------------------------------------------------

def _compare_gemm_flops(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.gemm_flops, cases, label="the GEMM FLOP count", rtol=0.0, atol=0.0, dtype="int8",
                hints={0.5: "a factor of 1/2: each of the m*n*k multiply-adds is 2 FLOPs"})


@exercise
def gemm_flops(fn: Callable) -> None:
    """``fn(m, n, k)`` -> FLOPs of C = A @ B with A (m, k) and B (k, n)."""
    __tracebackhide__ = True
    _compare_gemm_flops(fn, [Case((2000, 2000, 2000), label="the lecture's N = 2000 (16 GFLOP)"),
                             Case((4096, 1024, 512), label="m=4096, n=1024, k=512")], expected(LAB))


# --- 2. the CPU timer ---------------------------------------------------------------------------

class _SleepWork:
    """CPU work of known cost: ``seconds`` of sleep per call; the first call takes
    ``first_call_s`` more, and every ``slow_every``-th call ``slow_factor`` times as long."""

    def __init__(self, seconds: float, first_call_s: float = 0.0, slow_every: int = 0, slow_factor: float = 1.0):
        self.seconds, self.first_call_s = seconds, first_call_s
        self.slow_every, self.slow_factor = slow_every, slow_factor
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        d = self.seconds
        if self.slow_every and self.calls % self.slow_every == 0:
            d *= self.slow_factor
        if self.calls == 1:
            d += self.first_call_s
        time.sleep(d)


_NO_SYNC = ("Your timer stopped before the device finished: it measured the *launch*, not the work. GPU calls are "
            "asynchronous: fn() returns as soon as the work is queued. Synchronise: record events around each run "
            "and call gpu.synchronize() (or end.synchronize()) before reading elapsed_time; with a host clock, call "
            "gpu.synchronize() before reading the clock. The missing synchronisation is why the lecture's code "
            "reports thousands of 'TFLOP/s'.")


def _timer_problem(got: float, ref: float, probe: dict[str, Any], *, gpu: bool) -> str | None:
    """Why a timer's figure is wrong, or None when it is right.

    The work's cost ``probe["seconds"]`` is known (0 when it is not: real GPU work). No honest
    timer reports less than that; a busy machine can only add time, and it adds it to
    gpudl.timing's measurement in the same run too, so the upper limit follows that figure.
    """
    d = probe["seconds"]
    low, high = (0.85 * d, max(1.4 * d, 1.3 * ref)) if d else (LOW * ref, HIGH * ref)
    if low <= got <= high:
        return None
    base = d or ref
    ratio = got / base
    head = (f"on {probe['label']}, your timer reports {_fmt(got)} but the work takes {_fmt(base)} "
            f"(gpudl.timing measures {_fmt(ref)} on the same work)")
    if gpu and ratio < 0.3:
        return head + ".\n" + _NO_SYNC
    if 500 < ratio < 2000:
        extra = " CUDA events' elapsed_time is in milliseconds." if gpu else ""
        return head + f": about 1000x, milliseconds instead of seconds?{extra} Return seconds."
    cold = probe.get("first_call_s", 0.0)
    if cold and abs(got - (cold + d)) <= 0.15 * (cold + d):
        return (head + f".\nThat is the cost of the first call ({_fmt(cold)} of one-off work: loading, compiling, "
                "allocating). Warm up: call fn `warmup` times untimed, then time `repeats` runs.")
    if got > high:
        return (head + ".\nToo slow: a mean over runs that include the slow first call, or that a few slow runs "
                "pull up? Time only the runs after the warm-up and report their median (statistics.median), which "
                "one slow run cannot move.")
    return (head + ".\nToo fast: do you divide by the number of runs twice, or time less than one whole call of "
            "fn?")


def _judge_timer(measure_once: Callable[[], tuple[float, float, int]], probe: dict[str, Any], *, gpu: bool,
                 rounds: int = 5) -> int:
    """Run ``measure_once`` -> (student's figure, gpudl's figure, calls of fn): the two timers on the
    same work, back to back, so both see the same machine. A round inside the bounds passes. A round
    outside them is inconclusive, not a failure: a busy machine delays a few runs of an honest timer
    (whose median of 5 moves more easily than gpudl's of many), and the next round is measured, up to
    ``rounds`` in all; a wrong timer (a mean over a slow call, the first call timed, no
    synchronisation, milliseconds) is outside every round, and fails with the median round's message.
    Returns the calls."""
    __tracebackhide__ = True
    problems = []
    for _ in range(rounds):
        got, ref, calls = measure_once()
        problem = _timer_problem(got, ref, probe, gpu=gpu)
        if problem is None:
            return calls
        problems.append((got / ref if ref else got, problem))
    problems.sort(key=lambda p: p[0])
    raise GradingError(problems[len(problems) // 2][1])


def _timer_outcome(result: dict[str, Any], what: str, *, gpu: bool) -> tuple[float, int]:
    """The student's timer's figure and its number of calls of ``fn``, from what the adapter
    saw; a not-ready event, or a device still busy when the timer returned, is a missing
    synchronisation."""
    __tracebackhide__ = True
    if "not_ready" in result and not gpu:
        raise GradingError(f"{what} raised RuntimeError: {result['not_ready']}")
    if "not_ready" in result:
        raise GradingError(
            f"{what} read an event the device had not reached yet ({result['not_ready']}).\nGPU work is asynchronous: "
            "synchronise (gpu.synchronize() or end.synchronize()) before elapsed_time.")
    # An honest timer waits for the work it timed, so the device is idle when it returns. This
    # catches a missing synchronisation whatever the figure: on a fast GPU the launch of a
    # small matmul (with the guard's profiling hook) can take half as long as the matmul.
    if gpu and not result["idle"]:
        value = result["value"]
        shown = _fmt(value) if isinstance(value, float) else value["repr"]
        raise GradingError(f"{what} returned {shown} while the device was still running the work it timed.\n"
                           f"{_NO_SYNC}")
    return _as_seconds(result["value"], what), int(result["calls"])


def _timer_call(fn: Callable, work: Callable, *extra: Any, warmup: int, repeats: int) -> dict[str, Any]:
    """(Student side) ``fn(work, *extra, warmup=, repeats=)``; a "not ready" RuntimeError is
    reported as such, for the check to explain."""
    try:
        value = fn(work, *extra, warmup=warmup, repeats=repeats)
    except RuntimeError as exc:
        if isinstance(exc, NotImplementedError) or "not ready" not in str(exc):
            raise
        return {"not_ready": str(exc)}
    return {"value": _plain_number(value)}


@student_side
def _time_sleep_work(fn: Callable, seconds: float, kw: dict[str, Any], warmup: int, repeats: int) -> dict[str, Any]:
    """(Student side) the student's CPU timer on ``_SleepWork(seconds, **kw)``."""
    work = _SleepWork(seconds, **kw)
    result = _timer_call(fn, work, warmup=warmup, repeats=repeats)
    return {**result, "calls": work.calls}


@student_side
def _time_simulated_work(fn: Callable, seconds: float, kw: dict[str, Any], warmup: int,
                         repeats: int) -> dict[str, Any]:
    """(Student side) the student's GPU timer on a ``SimulatedGPU`` kernel of ``seconds``;
    whether the device was idle when the timer returned."""
    gpu = bench.SimulatedGPU()
    work = gpu.kernel(seconds, **kw)
    try:
        result = _timer_call(fn, work, gpu, warmup=warmup, repeats=repeats)
        idle = gpu.idle()
    finally:
        gpu.synchronize()
    return {**result, "calls": work.calls, "idle": idle}


def _check_calls(calls: int, warmup: int, repeats: int, what: str) -> None:
    __tracebackhide__ = True
    if calls != warmup + repeats:
        raise GradingError(f"{what} called fn {calls} times; with warmup={warmup} and repeats={repeats} it should "
                           f"call it {warmup + repeats} times: {warmup} untimed warm-up runs, then {repeats} timed ones")


# Work of 10 ms, so that a busy machine's scheduling delays stay small beside it; one call in five
# 6x slower, so that a mean moves and a median does not.
_CPU_PROBES = [dict(label="work of 10 ms whose first call takes 70 ms more", seconds=0.01, first_call_s=0.07,
                    warmup=1, repeats=5),
               dict(label="work of 10 ms, every 5th call 6x slower", seconds=0.01, slow_every=5, slow_factor=6.0,
                    warmup=2, repeats=5)]


def _compare_timer(fn: Callable, probes: Sequence[dict[str, Any]], *, gpu: bool) -> None:
    """The student's timer on each probe (work of known cost: ``_SleepWork``, or a kernel of a
    ``SimulatedGPU``) against ``gpudl.timing`` on the same work, then its number of calls."""
    __tracebackhide__ = True
    what, counts = ("gpu_timer" if gpu else "cpu_timer"), []
    for probe in probes:
        kw = dict(first_call_s=probe.get("first_call_s", 0.0), slow_every=probe.get("slow_every", 0),
                  slow_factor=probe.get("slow_factor", 1.0))
        d, w, r = probe["seconds"], probe["warmup"], probe["repeats"]

        def once(kw=kw, d=d, w=w, r=r):
            result = run_student(_time_simulated_work if gpu else _time_sleep_work, fn, d, kw, w, r,
                                 forbid=_TIMER_FORBID, label="the timer exercise", what=what)
            got, calls = _timer_outcome(result, what, gpu=gpu)
            with quiet():
                if gpu:
                    ref_gpu = bench.SimulatedGPU()
                    ref = bench.time_cuda(ref_gpu.kernel(d, **kw), api=ref_gpu, warmup=w, min_runs=10,
                                          budget_s=0.3).median
                else:
                    ref = bench.time_cpu(_SleepWork(d, **kw), warmup=w, min_runs=5, budget_s=0.3).median
            return got, ref, calls

        counts.append((_judge_timer(once, probe, gpu=gpu), w, r))
    for calls, w, r in counts:          # after the figures: a wrong figure has the more telling message
        _check_calls(calls, w, r, what)


def _compare_cpu_timer(fn: Callable, probes: Sequence[dict[str, Any]]) -> None:
    __tracebackhide__ = True
    with timed("host"):
        _compare_timer(fn, probes, gpu=False)


@exercise
def cpu_timer(fn: Callable) -> None:
    """``fn(work, warmup=..., repeats=...)`` -> median seconds of ``repeats`` timed calls after
    ``warmup`` untimed ones."""
    __tracebackhide__ = True
    _compare_cpu_timer(fn, _CPU_PROBES)


# --- 3. the GPU timer -----------------------------------------------------------------------------

_GPU_PROBES = [dict(label="asynchronous work of 5 ms on the simulated GPU", seconds=0.005, warmup=3, repeats=10),
               dict(label="asynchronous work of 5 ms whose first call costs 40 ms of host time",
                    seconds=0.005, first_call_s=0.04, warmup=3, repeats=10),
               dict(label="asynchronous work of 5 ms, every 4th run 4x slower", seconds=0.005, slow_every=4,
                    slow_factor=4.0, warmup=3, repeats=10)]


def _compare_gpu_timer(fn: Callable, probes: Sequence[dict[str, Any]], cuda_n: int) -> None:
    """The simulated probes, and on a GPU an ``cuda_n``^3 FP32 matmul timed with ``torch.cuda``."""
    __tracebackhide__ = True
    with timed("host"):                     # the simulated GPU's work is the host's clock
        _compare_timer(fn, probes, gpu=True)
    if hardware.device() == "cuda":
        with timed("gpu"):
            _gpu_timer_on_cuda(fn, cuda_n)


@exercise
def gpu_timer(fn: Callable) -> None:
    """``fn(work, gpu, warmup=..., repeats=...)`` -> median seconds, timed with ``gpu``'s events.

    Checked against a ``SimulatedGPU`` (asynchronous work of known duration) on any machine,
    and on a GPU also against ``torch.cuda`` with a real matmul.
    """
    __tracebackhide__ = True
    _compare_gpu_timer(fn, _GPU_PROBES, 2048)


@student_side
def _time_cuda_matmul(fn: Callable, n: int, warmup: int, repeats: int) -> dict[str, Any]:
    """(Student side) the student's GPU timer on an n^3 FP32 matmul with ``torch.cuda``;
    whether the stream was idle when the timer returned."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=g)   # (n, n)
    b = torch.randn(n, n, device="cuda", generator=g)   # (n, n)
    calls = [0]

    def work():
        calls[0] += 1
        return torch.matmul(a, b)

    with bench.allow_tf32(False):
        try:
            result = _timer_call(fn, work, torch.cuda, warmup=warmup, repeats=repeats)
            idle = torch.cuda.current_stream().query()
        finally:
            torch.cuda.synchronize()
    return {**result, "calls": calls[0], "idle": idle}


def _gpu_timer_on_cuda(fn: Callable, n: int) -> None:
    __tracebackhide__ = True
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=g)   # (n, n): the same work as the student's timer gets
    b = torch.randn(n, n, device="cuda", generator=g)   # (n, n)
    probe = dict(label=f"a {n}x{n}x{n} FP32 matmul on the GPU (torch.cuda)", seconds=0.0)

    def once():
        result = run_student(_time_cuda_matmul, fn, n, 3, 10, forbid=_TIMER_FORBID, label="the timer exercise",
                             what="gpu_timer")
        got, calls = _timer_outcome(result, "gpu_timer", gpu=True)
        with quiet(), bench.allow_tf32(False):
            ref = bench.time_cuda(lambda: torch.matmul(a, b), flush_l2=False).median
        return got, ref, calls

    _check_calls(_judge_timer(once, probe, gpu=True), 3, 10, "gpu_timer")


# --- 4. TFLOP/s of one matmul ------------------------------------------------------------------

# The simulated device of these checks: slow enough that each matmul takes milliseconds, with
# the 1 : 8 : 16 ratios of an A100's FP32, TF32 and FP16/BF16 peaks.
_SIM_RATES = {"fp32": 0.1e12, "tf32": 0.8e12, "fp16": 1.6e12, "bf16": 1.6e12}


def _ref_timer_sim(gpu: bench.SimulatedGPU) -> Callable:
    return lambda work: bench.time_cuda(work, api=gpu, min_runs=5, budget_s=0.2, warmup_s=0.01).median


@student_side
def _matmul_tflops_simulated(fn: Callable, n: int, dt: str, tf32_before: bool) -> dict[str, Any]:
    """(Student side) ``fn(n, dt, timer, matmul, "cpu")`` with the simulated device's matmul and
    a timer of it, TF32 set to ``tf32_before`` first: its figure, the matmuls the device ran
    and the TF32 setting it left. The notebook's own TF32 setting is restored afterwards."""
    gpu = bench.SimulatedGPU(rates=_SIM_RATES)
    with bench.allow_tf32(tf32_before):
        try:
            got = fn(n, dt, _ref_timer_sim(gpu), gpu.matmul, "cpu")
        finally:
            tf32_after = bench.tf32_allowed()
    gpu.synchronize()
    launches = [{"dtype": launch.dtype, "shape": tuple(launch.shape), "tf32": bool(launch.tf32)}
                for launch in gpu.launches if launch.name.startswith("matmul")]
    return {"value": _plain_number(got), "launches": launches, "tf32_after": bool(tf32_after)}


class _TimerFailed(RuntimeError):
    """What the failing timer of the check raises."""


def _failing_timer(work: Callable[[], Any]) -> float:
    raise _TimerFailed("CUDA out of memory (this timer fails on purpose: the test checks that TF32 is restored)")


@student_side
def _matmul_tflops_timer_fails(fn: Callable, n: int, dt: str, tf32_before: bool) -> dict[str, Any]:
    """(Student side) ``fn`` with a timer that raises, TF32 set to ``tf32_before`` first: the TF32
    setting it leaves behind. Whatever ``fn`` raises or returns is not judged here."""
    gpu = bench.SimulatedGPU(rates=_SIM_RATES)
    with bench.allow_tf32(tf32_before):
        try:
            fn(n, dt, _failing_timer, gpu.matmul, "cpu")
        except NotImplementedError:
            raise
        except Exception:  # noqa: BLE001 - the failing timer's error, passed on or not: both are fine
            pass
        finally:
            tf32_after = bench.tf32_allowed()
    return {"tf32_after": bool(tf32_after)}


def _failing_timer_case(fn: Callable, dt: str, tf32_before: bool) -> None:
    __tracebackhide__ = True
    where = (f"matmul_tflops(64, {dt!r}, ...) with TF32 {'on' if tf32_before else 'off'} before the call and a "
             "timer that raises")
    result = run_student(_matmul_tflops_timer_fails, fn, 64, dt, tf32_before, what=where,
                         label="the matmul TFLOP/s exercise")
    if result["tf32_after"] != tf32_before:
        raise GradingError(
            f"{where}: after the timer failed, TF32 was {'on' if result['tf32_after'] else 'off'}; it was "
            f"{'on' if tf32_before else 'off'} before. Restore the setting in a `finally:` block, so that it is put "
            "back even when timing fails.")


def _cuda_timer(work: Callable[[], Any]) -> float:
    """gpudl's GPU timer, handed to the student's matmul_tflops on a GPU."""
    return bench.time_cuda(work).median


@student_side
def _matmul_tflops_cuda(fn: Callable, n: int, dt: str) -> dict[str, Any]:
    """(Student side) ``fn(n, dt, timer, torch.matmul, "cuda")`` with TF32 off before: its
    figure and whether it left TF32 on."""
    import torch

    with bench.allow_tf32(False):
        got = fn(n, dt, _cuda_timer, torch.matmul, "cuda")
        left_on = bench.tf32_allowed()
    return {"value": _plain_number(got), "tf32_after": bool(left_on)}


def _compare_matmul_tflops(fn: Callable, cases: Sequence[tuple[str, int, bool]], cuda_n: int) -> None:
    """Each case (dtype, n, TF32 before) on the simulated device, a timer that fails (TF32 must be
    restored all the same), and on a GPU the four dtypes at ``cuda_n``^3 with torch.matmul."""
    __tracebackhide__ = True
    with timed("host"):                     # the simulated device's matmuls are the host's clock
        for dt, n, tf32_before in cases:
            _one_matmul_case(fn, dt, n, tf32_before)
    for dt, tf32_before in (("tf32", False), ("fp32", True)):
        _failing_timer_case(fn, dt, tf32_before)
    if hardware.device() == "cuda":
        with timed("gpu"):
            for dt in ("fp32", "tf32", "fp16", "bf16"):
                _one_matmul_case_cuda(fn, dt, cuda_n)


@exercise
def matmul_tflops(fn: Callable) -> None:
    """``fn(n, dtype, timer, matmul=torch.matmul, device=...)`` -> TFLOP/s of an n^3 matmul,
    with TF32 set exactly as ``dtype`` asks and restored afterwards."""
    __tracebackhide__ = True
    _compare_matmul_tflops(fn, [("fp32", 512, False), ("tf32", 768, False), ("fp32", 512, True),
                                ("fp16", 1024, False), ("bf16", 1024, True)], 2048)


def _one_matmul_case(fn: Callable, dt: str, n: int, tf32_before: bool) -> None:
    __tracebackhide__ = True
    where = f"matmul_tflops({n}, {dt!r}, ...) with TF32 {'on' if tf32_before else 'off'} before the call"
    result = run_student(_matmul_tflops_simulated, fn, n, dt, tf32_before, what=where,
                         label="the matmul TFLOP/s exercise")
    launches, tf32_after = result["launches"], result["tf32_after"]
    if not launches:
        raise GradingError(f"{where}: the `matmul` you were given was never called. Time `matmul(a, b)` "
                           "(on a GPU it is torch.matmul; here the grader passes a simulated one).")
    storage = bench.torch_dtype(dt)
    for launch in launches:
        if launch["dtype"] != hardware.normalize_dtype(storage):
            raise GradingError(f"{where}: your matrices are {launch['dtype']}, but {dt!r} needs {storage} data"
                               + (" (TF32 is a math mode for FP32 data)" if dt == "tf32" else ""))
        if tuple(launch["shape"]) != (n, n, n):
            raise GradingError(f"{where}: you multiplied shapes giving m, n, k = {tuple(launch['shape'])}; "
                               f"expected two {n} x {n} matrices")
        if dt in ("fp32", "tf32") and launch["tf32"] != (dt == "tf32"):
            if dt == "fp32":
                raise GradingError(
                    f"{where}: TF32 was allowed while your FP32 matmul ran, so it ran on tensor cores in TF32 "
                    "(10-bit mantissa), not in FP32. Set torch.backends.cuda.matmul.allow_tf32 = False for 'fp32' "
                    "explicitly: never rely on whatever the setting happens to be.")
            raise GradingError(f"{where}: TF32 was off while your 'tf32' matmul ran: set "
                               "torch.backends.cuda.matmul.allow_tf32 = True for 'tf32'.")
    if tf32_after != tf32_before:
        raise GradingError(
            f"{where}: after your function returned, TF32 was {'on' if tf32_after else 'off'}; it was "
            f"{'on' if tf32_before else 'off'} before. Leave the setting as you found it (save it, and restore it "
            "in a `finally:`): TF32 left on silently turns every later FP32 matmul of the program into TF32.")
    # The simulated device runs an n^3 matmul in exactly 2 n^3 / rate: its rate is the figure.
    first = [(_as_float(result["value"], where, "TFLOP/s"), _SIM_RATES[dt] / 1e12)]

    def again() -> tuple[float, float]:
        again_result = run_student(_matmul_tflops_simulated, fn, n, dt, tf32_before, what=where,
                                   label="the matmul TFLOP/s exercise")
        return _as_float(again_result["value"], where, "TFLOP/s"), _SIM_RATES[dt] / 1e12

    _judge_rates(lambda: first.pop() if first else again(), where, "the simulated device runs", rounds=1)


def _judge_rates(measure: Callable[[], tuple[float, float]], where: str, source: str,
                 rounds: int = RATE_ROUNDS, attempts: int = RATE_ATTEMPTS) -> None:
    """Judge a student's rate against gpudl's on the same work (``judge_ratio``): the median
    ratio of ``rounds`` rounds inside the band [LOW, 1 / LOW] passes; outside [SURE, 1 / SURE]
    fails with the teaching message; in between it is measured again, ``attempts`` times at most,
    then passes: a busy or boosting device can move an honest figure, and a wrong one (a factor of
    2, of 1e3) stays far out."""
    __tracebackhide__ = True
    judge_ratio(measure, passes=lambda r: LOW <= r <= 1 / LOW, fails=lambda r: not SURE <= r <= 1 / SURE,
                fail=lambda value, expected: _compare_rates(value, expected, where, source),
                rounds=rounds, attempts=attempts)


def _compare_rates(value: float, expected: float, where: str, source: str) -> None:
    __tracebackhide__ = True
    ratio = value / expected
    if LOW <= ratio <= 1 / LOW:
        return
    hint = ratio_hint(value, expected, {1e3: "a factor of 1e3: GFLOP/s reported as TFLOP/s? 1 TFLOP/s = 1e12 FLOP/s",
                                        0.5: "a factor of 1/2: n^3 multiply-adds are 2 n^3 FLOPs"})
    raise GradingError(f"{where}: you report {value:.4g} TFLOP/s; {source} {expected:.4g} TFLOP/s for "
                       f"the same matmul (ratio {ratio:.3g})" + (f": off by {hint}" if hint else
                                                                  ". TFLOP/s = 2 n^3 / seconds / 1e12."))


def _one_matmul_case_cuda(fn: Callable, dt: str, n: int) -> None:
    __tracebackhide__ = True
    where = f"matmul_tflops({n}, {dt!r}, ...) on the GPU"
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(n, n, device="cuda", generator=g).to(bench.torch_dtype(dt))   # (n, n): the same work
    b = torch.randn(n, n, device="cuda", generator=g).to(bench.torch_dtype(dt))   # (n, n)

    def one_round() -> tuple[float, float]:
        """The student's figure, then gpudl's on the same matmul with the same timer, back to back."""
        result = run_student(_matmul_tflops_cuda, fn, n, dt, what=where, label="the matmul TFLOP/s exercise")
        if result["tf32_after"]:
            raise GradingError(f"{where}: TF32 was left on after your function returned: restore it.")
        value = _as_float(result["value"], where, "TFLOP/s")
        with quiet(), bench.allow_tf32(dt == "tf32"):
            seconds = _cuda_timer(lambda: torch.matmul(a, b))
        return value, 2 * n ** 3 / seconds / 1e12

    _judge_rates(one_round, where, "gpudl.timing measures torch.matmul at")


# --- 5. the sweep --------------------------------------------------------------------------------

def _fake_measure(log: list) -> Callable:
    def measure(n, dtype):
        log.append((n, dtype))
        return round(float(n) / 1000 + 10 * ["fp32", "tf32", "fp16", "bf16"].index(dtype) + 0.5, 6)
    return measure


@contextlib.contextmanager
def _tqdm_bars():
    """Record, for every tqdm bar made in the block (console or notebook), whether it is shown."""
    import tqdm.std

    shown: list[bool] = []
    original = tqdm.std.tqdm.__init__

    def recording(self, *args, **kwargs):
        original(self, *args, **kwargs)
        shown.append(not self.disable)

    tqdm.std.tqdm.__init__ = recording
    try:
        yield shown
    finally:
        tqdm.std.tqdm.__init__ = original


@student_side
def _run_sweep(fn: Callable, sizes: list, dtypes: list) -> dict[str, Any]:
    """(Student side) ``fn(sizes, dtypes, measure, progress=False)`` with a fake ``measure``:
    its result, what it printed, whether each tqdm bar it made was shown, and the calls of
    ``measure``."""
    log: list = []
    with quiet() as out, _tqdm_bars() as bars:
        got = fn(list(sizes), list(dtypes), _fake_measure(log), progress=False)
    if isinstance(got, Mapping):
        got = dict(got)
    return {"result": got, "printed": out.getvalue(), "bars": list(bars), "log": log}


def _compare_sweep(fn: Callable, cases: Sequence[tuple[list, list]]) -> None:
    __tracebackhide__ = True
    for sizes, dtypes in cases:
        where = f"sweep({sizes}, {dtypes}, measure, progress=False)"
        seen = run_student(_run_sweep, fn, list(sizes), list(dtypes), label="the sweep exercise", what=where)
        got, printed, bars, log = seen["result"], seen["printed"], seen["bars"], seen["log"]
        if printed.strip() or any(bars):
            shown = f"printed {printed.strip()[:120]!r}" if printed.strip() else "showed a progress bar"
            raise GradingError(f"{where} {shown}. With progress=False show and print nothing: "
                               "tqdm(..., disable=not progress). (nbgrader scores a test cell that writes to stderr "
                               "as failed, and a bar is noise in the graded notebook: it must be off while grading.)")
        if not isinstance(got, dict):
            raise GradingError(f"{where} returned a {type(got).__name__}; return a dict {{dtype: [TFLOP/s per size]}}")
        expected = {dt: [_fake_measure([])(n, dt) for n in sizes] for dt in dtypes}
        if set(got) != set(expected):
            raise GradingError(f"{where} has keys {sorted(got, key=str)}; expected one per dtype: {sorted(expected)}")
        for dt in dtypes:
            try:
                assert_close(np.asarray(got[dt], dtype=float), np.asarray(expected[dt]), rtol=1e-12, atol=0.0,
                             name=f"list for {dt!r}")
            except (GradingError, TypeError, ValueError) as exc:
                raise GradingError(f"{where}: {exc}\nEach list holds measure(n, dtype) for the sizes in the order "
                                   "given.") from None
        if sorted(log) != sorted((n, dt) for dt in dtypes for n in sizes):
            raise GradingError(f"{where} called measure {len(log)} times for {len(sizes) * len(dtypes)} "
                               "(size, dtype) pairs: measure each pair exactly once")


@exercise
def sweep(fn: Callable) -> None:
    """``fn(sizes, dtypes, measure, progress=True)`` -> {dtype: [measure(n, dtype) for n in sizes]}."""
    __tracebackhide__ = True
    _compare_sweep(fn, [([256, 512, 1024], ["fp32"]), ([128, 64, 1024], ["fp16", "fp32"])])


# --- 6. the plot -----------------------------------------------------------------------------------

def _compare_plot_sweep(fn: Callable, setups: Sequence[tuple]) -> None:
    __tracebackhide__ = True
    for sizes, results, peaks in setups:
        ax = draw(fn, list(sizes), {k: list(v) for k, v in results.items()}, dict(peaks),
                  label="the sweep plot", what="plot_sweep")
        _inspect_sweep_plot(ax, sizes, results, peaks)


@exercise
def plot_sweep(fn: Callable) -> None:
    """``fn(ax, sizes, results, peaks)``: one line per dtype (label = dtype) of TFLOP/s against n,
    a horizontal line at each known peak, a log x axis."""
    __tracebackhide__ = True
    _compare_plot_sweep(fn, [([256, 512, 1024, 2048], {"fp32": [5.0, 20.0, 40.0, 50.0],
                                                       "bf16": [20.0, 150.0, 500.0, 700.0]},
                              {"fp32": 66.9, "bf16": 989.4})])


def _horizontal_at(line, y: float) -> bool:
    _, ys = (np.asarray(v, dtype=float).ravel() for v in line.get_data())
    return ys.size >= 2 and np.allclose(ys, y, rtol=1e-6)


def _inspect_sweep_plot(ax: AxesSnapshot, sizes, results, peaks) -> None:
    __tracebackhide__ = True
    if ax.get_xscale() != "log":
        raise GradingError(f"the x axis is {ax.get_xscale()}: sizes double from point to point, so use a log scale "
                           "(ax.set_xscale('log', base=2))")
    for dt, values in results.items():
        match = [ln for ln in ax.lines if ln.get_label() == dt]
        if not match:
            labels = [ln.get_label() for ln in ax.lines]
            raise GradingError(f"no line labelled {dt!r} (the lines are labelled {labels}): label each dtype's line "
                               "with the dtype, e.g. ax.plot(sizes, results[dtype], 'o-', label=dtype)")
        x, y = (np.asarray(v, dtype=float) for v in match[0].get_data())
        if x.shape != (len(sizes),) or not np.allclose(x, sizes):
            raise GradingError(f"the {dt!r} line has x = {x.tolist()}; expected the sizes {list(sizes)}")
        try:
            assert_close(y, np.asarray(values, dtype=float), rtol=1e-6, atol=0.0, name=f"{dt!r} line's y values",
                         hints={1e3: "a factor of 1e3: plot TFLOP/s, as given (not GFLOP/s)"})
        except GradingError as exc:
            raise GradingError(f"{exc}\nplot results[dtype] as they are: TFLOP/s against n") from None
    for dt, peak in peaks.items():
        if peak is None:
            continue
        if not any(_horizontal_at(ln, peak) for ln in ax.lines):
            raise GradingError(f"no horizontal line at the {dt!r} peak ({peak:g} TFLOP/s): draw each known peak, "
                               "e.g. ax.axhline(peak, linestyle='--')")
    if "tflop" not in ax.get_ylabel().lower():
        raise GradingError(f"the y axis is labelled {ax.get_ylabel()!r}: say what it shows, in its unit (TFLOP/s)")


# --- 7. fraction of peak --------------------------------------------------------------------------

def _compare_fraction_of_peak(fn: Callable, good: Sequence[tuple[float, str, str]],
                              above: Sequence[tuple[float, str, str]], ref: Any) -> None:
    """``good``: (TFLOP/s, GPU, dtype) below peak, compared with ``ref.fraction_of_peak``;
    ``above``: figures above peak, which must raise ValueError."""
    __tracebackhide__ = True
    cases = [Case((t, hardware.SPECS[s], d), label=f"{t:.4g} TFLOP/s in {d} on the {s}") for t, s, d in good]
    check_cases(fn, ref.fraction_of_peak, cases, label="the fraction of peak", rtol=1e-9, atol=0.0,
                hints={1e-12: "a factor of 1e-12: the figure is in TFLOP/s, the peak in FLOP/s",
                       1e12: "a factor of 1e12: the figure is in TFLOP/s, the peak in FLOP/s",
                       100.0: "a factor of 100: return a fraction, not a percentage",
                       0.5: "a factor of 1/2: the 2:4 sparse peak instead of the dense one?",
                       2.0: "a factor of 2: the peak of the wrong dtype or units (CUDA cores vs tensor cores)?"})
    for t, s, d in above:
        where = f"fraction_of_peak({t:.4g}, SPECS[{s!r}], {d!r})"
        seen = run_student(_fraction_or_raise, fn, t, hardware.SPECS[s], d, label="the fraction of peak", what=where)
        if "raised" in seen:
            if seen["value_error"]:
                continue
            raise GradingError(f"{where} raised {seen['raised']}: {seen['message']}; raise a ValueError")
        raise GradingError(f"{where} returned {seen['value']}, but {t:.4g} TFLOP/s is above the {s}'s {d} peak of "
                           f"{hardware.peak_flops(s, d) / 1e12:.4g} TFLOP/s: no kernel beats peak. "
                           "Raise ValueError for a fraction above 1: the measurement is broken (no synchronisation, "
                           "wrong FLOP count), and a figure above peak must never reach a plot.")


@exercise
def fraction_of_peak(fn: Callable) -> None:
    """``fn(tflops, spec, dtype)`` -> the fraction of ``spec``'s peak for ``dtype``; raises
    ValueError for a figure above peak."""
    __tracebackhide__ = True
    _compare_fraction_of_peak(fn, [(700.0, "H200", "bf16"), (51.0, "H200", "fp32"), (18.0, "A100", "fp32"),
                                   (400.0, "H100-SXM", "tf32")],
                              [(5250.0, "H200", "fp32")], expected(LAB))           # the lecture's code on an H200


@student_side
def _fraction_or_raise(fn: Callable, tflops: float, spec: hardware.GPUSpec, dtype: str) -> dict[str, Any]:
    """(Student side) ``fn(tflops, spec, dtype)``: what it returned (as text), or the exception it
    raised and whether that is a ValueError. NotImplementedError is not caught."""
    try:
        value = fn(tflops, spec, dtype)
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the student's code raises is judged by the check
        return {"raised": type(exc).__name__, "value_error": isinstance(exc, ValueError), "message": str(exc)[:500]}
    text = repr(value)
    return {"value": text if len(text) <= 120 else text[:117] + "..."}


# --- 8. regimes ----------------------------------------------------------------------------------

def _compare_regime(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.regime, cases, label="the regime", compare=assert_equal, name="regime",
                hint="check in order: launch (work at peak < launch overhead), underfilled (tiles < SMs), "
                     "waves (wave efficiency < 0.8), else compute; tiles = ceil(n / tile)^2")


@exercise
def regime(fn: Callable) -> None:
    """``fn(n, sms, peak_flops, launch_overhead_s=5e-6, tile=128)`` -> "launch", "underfilled",
    "waves" or "compute"."""
    __tracebackhide__ = True
    h100 = hardware.SPECS["H100-SXM"]
    fp32, bf16 = hardware.peak_flops(h100, "fp32"), hardware.peak_flops(h100, "bf16")
    cases = [Case((n, h100.sms, fp32), label=f"n = {n} on an H100 in FP32") for n in (128, 1024, 1536, 8192)]
    cases += [Case((1024, h100.sms, bf16), label="n = 1024 on an H100 in BF16"),
              Case((1536, h100.sms, bf16), label="n = 1536 on an H100 in BF16: 2 n^3 = 7.2 GFLOP take 7.3 us at "
                                                 "peak, more than a launch"),
              Case((1025, 64, 1e13), label="n = 1025 on 64 SMs: a partial 9th row and column of tiles "
                                           "(ceil(1025 / 128) = 9)")]
    _compare_regime(fn, cases, expected(LAB))


# --- 9. questions --------------------------------------------------------------------------------
#
# The visible check says only whether an answer is well-formed; the verdict is the hidden check's.

def _one_letter(answer: Any, allowed: str) -> str:
    __tracebackhide__ = True
    letters = choice_letters(answer, allowed)
    if len(letters) != 1:
        raise GradingError(f"answer with one letter among {allowed[0]}-{allowed[-1]}, got {answer!r}")
    return letters


@exercise
@question
def lecture_code_question(answer: str) -> None:
    """Why does the lecture's code report ~5,250 TFLOP/s for a 6000^3 FP32 matmul on an H200?"""
    __tracebackhide__ = True
    _one_letter(answer, "ABCD")


@exercise
@question
def first_call_question(answer: str) -> None:
    """Which of these make a GPU matmul's first call slower than the next ones?"""
    __tracebackhide__ = True
    choice_letters(answer, "ABCDE")
