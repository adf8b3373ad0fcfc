"""Timing done right: the project's one timing module.

GPU work is asynchronous: a call returns as soon as the kernel is *queued*. Timing it with
``time.time()`` and no synchronisation measures the launch, not the work. Here:

- ``time_cpu``  times synchronous work with ``time.perf_counter``;
- ``time_cuda`` brackets each run with CUDA events, optionally flushes the L2 cache before
  each run (so every run starts cold, as ``triton.testing.do_bench`` does), and reads the
  events only after synchronising;
- both warm up first (first calls compile, allocate, load libraries, raise clocks), keep
  every raw time, and stop once the median is stable (its confidence interval within
  ``rel_ci``) or the time budget is spent;
- ``measure`` chooses between them for a device ("cpu", "cuda", or a simulated GPU such as
  ``gpudl.bench.SimulatedGPU``);
- ``cuda_graphed`` captures a call in a CUDA graph: timing its replay times the kernels without
  the Python that launches them (a small kernel can take less time than its launch);
- ``host_time`` times the other side: the host's seconds per call while the GPU is busy (the
  launches queue, nothing waits), what a kernel shorter than that leaves the GPU idle for;
- ``check_plausible`` refuses a rate above the device's peak: that is a broken measurement,
  never a fast kernel.

A ``Measurement`` keeps the raw times and reports the median (robust to the occasional
slow run) with quantiles. Every benchmark, notebook and check times through this module;
``gpudl.bench`` (Unit 02, which teaches it) re-exports its names. Lab 02 asks students to write
timers of their own: its checks forbid ``time_cpu``, ``time_cuda`` and ``measure`` by name (the
guard then notices a call of them from anywhere, a course tool built on them included), and
their contract (keyword-only options, a ``Measurement``) is not the exercises' (positional
``warmup`` and ``repeats``, the median in seconds).

Public names, in order: ``Measurement``, ``time_cpu``, ``time_cuda``, ``measure``, ``cuda_graphed``,
``host_time``, ``ImplausibleMeasurementError``, ``check_plausible``.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence


class ImplausibleMeasurementError(RuntimeError):
    """A measurement claims more than the device can do."""


@dataclass(frozen=True)
class Measurement:
    """Raw times (seconds) of repeated runs of one piece of work, and their statistics."""

    times: tuple[float, ...]
    what: str = ""
    device: str = "cpu"
    method: str = "perf_counter"
    warmup: int = 0

    def __post_init__(self) -> None:
        if not self.times:
            raise ValueError("a Measurement needs at least one time")
        if any(t < 0 or not math.isfinite(t) for t in self.times):
            raise ValueError(f"times must be finite and non-negative, got {self.times[:5]}...")

    @property
    def count(self) -> int:
        return len(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def min(self) -> float:
        return min(self.times)

    @property
    def max(self) -> float:
        return max(self.times)

    def quantile(self, q: float) -> float:
        """The q-quantile (0..1) of the times, by linear interpolation."""
        if not 0 <= q <= 1:
            raise ValueError(f"q must be in [0, 1], got {q}")
        s = sorted(self.times)
        pos = q * (len(s) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return s[lo] + (s[hi] - s[lo]) * (pos - lo)

    @property
    def iqr(self) -> float:
        return self.quantile(0.75) - self.quantile(0.25)

    @property
    def median_ci(self) -> float:
        """Half-width of an approximate 95% confidence interval of the median (1.57 IQR / sqrt n)."""
        return 1.57 * self.iqr / math.sqrt(self.count)

    def __str__(self) -> str:
        return (f"{self.what or 'work'}: median {_fmt_time(self.median)} "
                f"(IQR {_fmt_time(self.quantile(0.25))}..{_fmt_time(self.quantile(0.75))}, "
                f"n={self.count}, {self.method} on {self.device})")


def _fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _stable(times: Sequence[float], rel_ci: float) -> bool:
    if len(times) < 3:
        return False
    m = Measurement(tuple(times))
    return m.median > 0 and m.median_ci <= rel_ci * m.median


def time_cpu(fn: Callable[[], Any], *, warmup: int = 1, min_runs: int = 5, max_runs: int = 10_000,
             budget_s: float = 1.0, rel_ci: float = 0.02, what: str = "") -> Measurement:
    """Time synchronous work: ``warmup`` untimed calls, then runs until the median is stable
    within ``rel_ci`` (after at least ``min_runs``), ``max_runs`` are done, or ``budget_s``
    seconds are spent."""
    if min_runs < 1 or max_runs < min_runs:
        raise ValueError(f"need 1 <= min_runs <= max_runs, got {min_runs}, {max_runs}")
    for _ in range(warmup):
        fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max_runs:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= min_runs and (time.perf_counter() - start > budget_s or _stable(times, rel_ci)):
            break
    return Measurement(tuple(times), what=what, device="cpu", method="perf_counter", warmup=warmup)


def flush_bytes(l2_bytes: int) -> int:
    """The bytes zeroed to flush an L2 cache of ``l2_bytes``: twice the cache, and at least 256 MiB."""
    return max(2 * l2_bytes, 256 * 2**20)


def _l2_flush_buffer(device_index: int):
    """A buffer of ``flush_bytes`` of the GPU's L2 cache; zeroing it evicts whatever was cached.
    Like do_bench, each measurement allocates its own (from torch's caching allocator, so it is
    cheap), which leaves the timed work's tensors where do_bench's are."""
    import torch

    l2 = int(getattr(torch.cuda.get_device_properties(device_index), "L2_cache_size", 0)) or 64 * 2**20
    return torch.empty(flush_bytes(l2) // 4, dtype=torch.int32, device=f"cuda:{device_index}")


def _nothing() -> None:
    pass


def time_cuda(fn: Callable[[], Any], *, warmup: int = 3, min_runs: int = 10, max_runs: int = 10_000,
              budget_s: float = 1.0, rel_ci: float = 0.01, flush_l2: bool = True, batch: int = 10,
              what: str = "", warmup_s: float = 0.025, min_time_s: float = 0.1, api: Any = None) -> Measurement:
    """Time GPU work with CUDA events, one pair per run, the way ``triton.testing.do_bench`` does.

    1. ``warmup`` calls and a synchronisation pay any first-call cost (compiling, allocating,
       choosing a library kernel) before anything is timed.
    2. Five runs under one pair of events estimate how long a run takes, L2 flush included.
    3. ``warmup_s`` of further calls (do_bench: 25 ms) flow straight into the first timed
       batch, with no synchronisation between them, and the batch holds enough runs to keep
       the GPU busy for ``min_time_s`` (do_bench: 100 ms). Before each timed run the L2 cache
       is flushed (``flush_l2``), outside the events; the events are made beforehand, so the
       GPU never waits for the host.
    4. Timing stops once the median is stable (``rel_ci``), or ``max_runs`` are done, or
       ``budget_s`` is spent; the events of each further batch are made while the GPU works.

    Why so particular: a GPU's speed on the same kernel drifts by a few percent with its
    clock, power and heat, so the median depends on the warm-up and the window. An earlier
    version, with a longer window and a pause after the warm-up, read 4096^3 tensor-core
    matmuls up to 2.5% faster than do_bench on an H200; ``gpudl bench matmul`` compares them.

    ``api`` is the device interface: ``torch.cuda`` (the default) or a ``SimulatedGPU``,
    anything with ``Event(enable_timing=True)`` and ``synchronize()``.
    """
    if api is None:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("time_cuda needs a CUDA device; use time_cpu (or measure) on the CPU")
        api = torch.cuda
        device_index = torch.cuda.current_device()
        flush = _l2_flush_buffer(device_index).zero_ if flush_l2 else _nothing
        device_name, method = f"cuda:{device_index}", "cuda events" + (" + L2 flush" if flush_l2 else "")
    else:
        flush = (getattr(api, "flush_l2", None) if flush_l2 else None) or _nothing
        device_name = getattr(api, "name", type(api).__name__)
        method = "events" + (" + L2 flush" if flush is not _nothing else "")
    if min_runs < 1 or max_runs < min_runs:
        raise ValueError(f"need 1 <= min_runs <= max_runs, got {min_runs}, {max_runs}")

    def queue(events: list[tuple[Any, Any]]) -> None:
        for begin, end in events:
            flush()
            begin.record()
            fn()
            end.record()

    def make_events(n: int) -> list[tuple[Any, Any]]:
        return [(api.Event(enable_timing=True), api.Event(enable_timing=True)) for _ in range(n)]

    for _ in range(warmup):
        fn()
    api.synchronize()
    n_warm, per_run = 0, None
    if warmup > 0:
        begin, end = api.Event(enable_timing=True), api.Event(enable_timing=True)
        begin.record()
        for _ in range(5):
            flush()
            fn()
        end.record()
        api.synchronize()
        per_run = max(begin.elapsed_time(end) / 1e3 / 5, 1e-7)   # elapsed_time is in ms
        n_warm = min(max(1, int(warmup_s / per_run)), 100_000)
        batch = max(batch, min(math.ceil(min_time_s / per_run), 100_000))
    times: list[float] = []
    events = make_events(min(batch, max_runs))
    for _ in range(n_warm):
        fn()
    start = time.perf_counter()
    queue(events)
    while True:
        left = max_runs - len(times) - len(events)
        upcoming = make_events(min(batch, left)) if left > 0 else []   # built while the GPU works
        api.synchronize()
        times.extend(b.elapsed_time(e) / 1e3 for b, e in events)
        # the window, as do_bench counts it: runs with their flushes (estimated), or just the runs
        window = len(times) * per_run if per_run is not None else sum(times)
        if not upcoming or (len(times) >= min_runs and (
                time.perf_counter() - start > budget_s or (window >= min_time_s and _stable(times, rel_ci)))):
            break
        events = upcoming
        queue(events)
    return Measurement(tuple(times), what=what, device=device_name, method=method, warmup=warmup)


def measure(fn: Callable[[], Any], device: Any = None, **kwargs: Any) -> Measurement:
    """``time_cuda`` for "cuda" (or "cuda:N") or a simulated GPU (``gpudl.bench.SimulatedGPU``,
    or anything else with ``torch.cuda``'s ``Event`` and ``synchronize``), ``time_cpu`` for
    "cpu"; default: gpudl's device."""
    from .hardware import device as current_device

    if device and not isinstance(device, str):
        if callable(getattr(device, "Event", None)) and callable(getattr(device, "synchronize", None)):
            return time_cuda(fn, api=device, **kwargs)
        raise TypeError(f"device must be 'cpu', 'cuda' or a SimulatedGPU, got {type(device).__name__}")
    device = device or current_device()
    if device.startswith("cuda"):
        return time_cuda(fn, **kwargs)
    if device != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    cpu_kwargs = {k: v for k, v in kwargs.items() if k not in ("flush_l2", "batch", "warmup_s", "api")}
    return time_cpu(fn, **cpu_kwargs)


def cuda_graphed(fn: Callable[[], Any]) -> Callable[[], None]:
    """``fn`` captured once in a CUDA graph; returns the graph's ``replay``. A replay launches the
    captured kernels with none of the Python that issued them: what is left to time is the
    kernels (and one small, equal host cost per replay). Call ``fn`` once before (to compile or
    tune): nothing may be compiled or chosen while capturing."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()                                   # warm, on a side stream as capture requires
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def host_time(fn: Callable[[], Any], calls: int = 100) -> float | None:
    """Seconds of host time per call of ``fn`` (one that only queues GPU work) while the GPU is
    busy: ~0.2 s of GPU sleep goes in front, so the calls' launches queue and nothing waits for
    the GPU. A kernel shorter than this leaves the GPU idle between calls. None where torch has
    no ``cuda._sleep``; a machine without a GPU is refused."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("host_time measures the launch of GPU work, and this machine has no GPU")
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    fn()
    torch.cuda.synchronize()
    sleep(400_000_000)                     # ~0.2 s of GPU work in front of the calls
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return host


def check_plausible(rate: float, peak: float, *, what: str, unit: str = "FLOP/s", slack: float = 1.05) -> None:
    """Raise when a measured rate exceeds the device's peak (by more than ``slack``).

    A figure above peak is never a fast kernel; it is a broken measurement: the GPU was not
    synchronised (only the launch was timed), the work was skipped or cached, or the
    operation count is wrong.
    """
    if peak > 0 and rate > peak * slack:
        raise ImplausibleMeasurementError(
            f"{what}: {rate:.3g} {unit} is {rate / peak:.1f}x the device's peak of {peak:.3g} {unit}. "
            "No kernel beats peak: the timer most likely measured only the kernel *launch* "
            "(GPU calls are asynchronous: synchronise, or use CUDA events), or the FLOP count is wrong.")
