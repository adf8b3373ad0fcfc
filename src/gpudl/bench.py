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
- ``measure`` chooses between them for a device.

A ``Measurement`` keeps the raw times and reports the median (robust to the occasional
slow run) with quantiles. ``Table`` is what a benchmark returns: rows that
``gpudl bench`` prints and ``gpudl run-labs`` puts in its report.

On top of the timers, matrix multiplication measured honestly (Unit 02):

- ``gemm_flops`` counts 2mnk (one multiply-add is two FLOPs);
- ``allow_tf32`` sets whether FP32 matmuls may run on tensor cores in TF32, and puts the
  setting back; ``tf32_allowed`` reads it;
- ``matmul_tflops`` times one ``A @ B`` and gives TFLOP/s and the fraction of the device's
  peak (from ``gpudl.hardware``), refusing a figure above peak; ``matmul_sweep`` does it over
  sizes and dtypes with a progress bar that is silent while grading;
- ``gemm_waves`` and ``gemm_regime`` say why small matmuls are far from peak (launch
  overhead, too few tiles for the SMs, a partly empty last wave);
- ``SimulatedGPU`` is an asynchronous device for machines without one: work is queued on
  a timeline and the host returns at once, events are stamped when the queue reaches
  them, and ``synchronize`` waits. On a CPU it shows (and lets the grader prove) what an
  unsynchronised GPU timer gets wrong;
- ``BENCHMARKS["matmul"]`` (``gpudl bench matmul``) prints gpudl's median next to
  ``triton.testing.do_bench`` and ``torch.utils.benchmark.Timer`` for the same matmul.

Public names: ``Measurement``, ``time_cpu``, ``time_cuda``, ``measure``,
``ImplausibleMeasurementError``, ``check_plausible``, ``Table``, ``gemm_flops``,
``allow_tf32``, ``tf32_allowed``, ``MATMUL_DTYPES``, ``torch_dtype``, ``MatmulResult``,
``matmul_tflops``, ``matmul_sweep``, ``Waves``, ``gemm_waves``, ``REGIMES``, ``gemm_regime``,
``SimulatedGPU`` (with ``SimulatedEvent``, ``SimulatedKernel``, ``Launch``),
``matmul_benchmark``, ``BENCHMARKS``.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from .references import reference


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


@reference
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


def _l2_flush_buffer(device_index: int):
    """A buffer of twice the GPU's L2 cache, and at least 256 MB; zeroing it evicts whatever
    was cached. Like do_bench, each measurement allocates its own (from torch's caching
    allocator, so it is cheap), which leaves the timed work's tensors where do_bench's are."""
    import torch

    l2 = int(getattr(torch.cuda.get_device_properties(device_index), "L2_cache_size", 0)) or 64 * 2**20
    nbytes = max(2 * l2, 256 * 2**20)
    return torch.empty(nbytes // 4, dtype=torch.int32, device=f"cuda:{device_index}")


def _nothing() -> None:
    pass


@reference
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
    """``time_cuda`` for "cuda" (or "cuda:N") or a ``SimulatedGPU``, ``time_cpu`` for "cpu";
    default: gpudl's device."""
    from .hardware import device as current_device

    if isinstance(device, SimulatedGPU):
        return time_cuda(fn, api=device, **kwargs)
    device = device or current_device()
    if not isinstance(device, str):
        raise TypeError(f"device must be 'cpu', 'cuda' or a SimulatedGPU, got {type(device).__name__}")
    if device.startswith("cuda"):
        return time_cuda(fn, **kwargs)
    if device != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    cpu_kwargs = {k: v for k, v in kwargs.items() if k not in ("flush_l2", "batch", "warmup_s", "api")}
    return time_cpu(fn, **cpu_kwargs)


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


@dataclass
class Table:
    """What a benchmark returns: a title, rows of named values, notes, and optional figures."""

    title: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)   # file stem -> matplotlib Figure

    def columns(self) -> list[str]:
        cols: list[str] = []
        for row in self.rows:
            cols.extend(k for k in row if k not in cols)
        return cols

    @staticmethod
    def _cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)

    def to_markdown(self) -> str:
        cols = self.columns()
        lines = [f"### {self.title}", ""]
        if cols:
            lines.append("| " + " | ".join(cols) + " |")
            lines.append("|" + "---|" * len(cols))
            lines.extend("| " + " | ".join(self._cell(r.get(c)) for c in cols) + " |" for r in self.rows)
        lines.extend(f"\n{n}" for n in self.notes)
        return "\n".join(lines)

    def to_text(self) -> str:
        cols = self.columns()
        cells = [[self._cell(r.get(c)) for c in cols] for r in self.rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
        out = [self.title, "  ".join(c.ljust(w) for c, w in zip(cols, widths)),
               "  ".join("-" * w for w in widths)]
        out.extend("  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells)
        out.extend(self.notes)
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "rows": self.rows, "notes": self.notes}


# =======================================================================================
# Matrix multiplication, measured honestly (Unit 02)
# =======================================================================================

@reference
def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of C = A @ B with A (m, k) and B (k, n): each of the m*n outputs sums k
    products, one multiply-add (2 FLOPs) each, so 2mnk.

    >>> gemm_flops(2000, 2000, 2000) / 1e9   # the seed's "2*2*2*2" GFLOP
    16.0
    """
    for name, v in (("m", m), ("n", n), ("k", k)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return 2 * int(m) * int(n) * int(k)


# --- TF32: a tensor-core *mode* for FP32 matmuls, off by default for matmuls --------------
#
# torch has two spellings: the legacy ``torch.backends.cuda.matmul.allow_tf32`` (a bool) and
# the newer ``torch.backends.cuda.matmul.fp32_precision`` ("ieee"/"tf32"/"none"). Reading the
# legacy flag raises once the new one was used to turn TF32 on, so these helpers read
# whichever is consistent and write with the spelling that was in use.

def _tf32_state() -> tuple[str, Any]:
    import torch

    m = torch.backends.cuda.matmul
    try:
        return "legacy", bool(m.allow_tf32)
    except RuntimeError:              # the new API is in use: its value is the truth
        return "new", m.fp32_precision


def _set_tf32_state(state: tuple[str, Any]) -> None:
    import torch

    api, value = state
    if api == "legacy":
        torch.backends.cuda.matmul.allow_tf32 = bool(value)
    else:
        torch.backends.cuda.matmul.fp32_precision = value


def tf32_allowed() -> bool:
    """Whether an FP32 matmul on a GPU may run on tensor cores in TF32 right now."""
    api, value = _tf32_state()
    return value if api == "legacy" else value == "tf32"


@contextlib.contextmanager
def allow_tf32(enabled: bool) -> Iterator[None]:
    """Inside the block FP32 matmuls may (True) or may not (False) use TF32; afterwards the
    setting is what it was before, even if the block raised."""
    before = _tf32_state()
    api = before[0]
    _set_tf32_state((api, bool(enabled)) if api == "legacy" else (api, "tf32" if enabled else "ieee"))
    try:
        yield
    finally:
        _set_tf32_state(before)


# --- one matmul, and a sweep -------------------------------------------------------------

MATMUL_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16")
_STORAGE = {"fp64": "float64", "fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def torch_dtype(dtype: Any):
    """The torch storage dtype of a matmul dtype: "tf32" is stored as float32."""
    import torch

    from .hardware import normalize_dtype

    dt = normalize_dtype(dtype)
    if dt not in _STORAGE:
        raise ValueError(f"matmul dtype must be one of {', '.join(MATMUL_DTYPES)}, got {dtype!r}")
    return getattr(torch, _STORAGE[dt])


@dataclass(frozen=True)
class MatmulResult:
    """One timed C = A @ B: the measurement, and what it means in FLOP/s.

    ``dtype`` is what was asked for; ``mode`` what the math ran as ("tf32" for FP32 data
    with TF32 allowed). ``peak_flops`` is the device's peak for ``mode`` (None on a CPU:
    gpudl has no CPU specs).
    """

    m: int
    n: int
    k: int
    dtype: str
    mode: str
    device: str
    measurement: Measurement
    peak_flops: float | None = None

    def __post_init__(self) -> None:
        for name in ("m", "n", "k"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.dtype not in MATMUL_DTYPES or self.mode not in MATMUL_DTYPES:
            raise ValueError(f"dtype and mode must be among {MATMUL_DTYPES}, got {self.dtype!r}, {self.mode!r}")
        if self.peak_flops is not None and not self.peak_flops > 0:
            raise ValueError(f"peak_flops must be positive or None, got {self.peak_flops}")

    @property
    def flops(self) -> int:
        return gemm_flops(self.m, self.n, self.k)

    @property
    def seconds(self) -> float:
        return self.measurement.median

    @property
    def tflops(self) -> float:
        return self.flops / self.seconds / 1e12

    @property
    def fraction_of_peak(self) -> float | None:
        return None if self.peak_flops is None else self.flops / self.seconds / self.peak_flops

    def __str__(self) -> str:
        frac = "" if self.fraction_of_peak is None else f", {self.fraction_of_peak:.0%} of peak"
        return (f"{self.m}x{self.n}x{self.k} {self.mode} on {self.device}: {_fmt_time(self.seconds)}, "
                f"{self.tflops:.3g} TFLOP/s{frac}")


def _peak_for(device: Any, mode: str) -> float | None:
    from . import hardware

    if isinstance(device, SimulatedGPU):
        return device.peak_flops(mode)
    if isinstance(device, str) and device.startswith("cuda"):
        spec = hardware.detect()
        try:
            return hardware.peak_flops(spec, mode) if spec is not None else None
        except ValueError:
            return None
    return None


@reference
def matmul_tflops(m: int, n: int | None = None, k: int | None = None, dtype: Any = "fp32", device: Any = None, *,
                  tf32: bool | None = None, check: bool = True, seed: int = 0, **timer_kwargs: Any) -> MatmulResult:
    """Time ``A @ B`` (A: m x k, B: k x n, random normal) with gpudl's timer on ``device``.

    ``dtype`` is "fp32", "tf32" (FP32 data, TF32 math), "fp16", "bf16" or "fp64". TF32 is set
    exactly as asked: ``tf32=None`` means "only for dtype 'tf32'"; the previous setting is
    restored afterwards. ``device`` is "cpu", "cuda" or a ``SimulatedGPU`` (default: gpudl's
    device). With ``check``, a figure above the device's peak raises
    ``ImplausibleMeasurementError``. Extra keywords go to the timer (``measure``).
    """
    import torch

    from .hardware import device as current_device, normalize_dtype

    n = m if n is None else n
    k = m if k is None else k
    dt = normalize_dtype(dtype)
    storage = torch_dtype(dt)
    if tf32 is None:
        tf32 = dt == "tf32"
    elif dt == "tf32" and not tf32:
        raise ValueError("dtype 'tf32' with tf32=False is a contradiction: ask for 'fp32' instead")
    mode = "tf32" if storage == torch.float32 and tf32 else dt
    sim = device if isinstance(device, SimulatedGPU) else None
    device = device if sim is not None else (device or current_device())
    where = "cpu" if sim is not None else device
    g = torch.Generator(device=where).manual_seed(seed)
    a = torch.randn(m, k, generator=g, device=where, dtype=torch.float32).to(storage)   # (m, k)
    b = torch.randn(k, n, generator=g, device=where, dtype=torch.float32).to(storage)   # (k, n)
    matmul = sim.matmul if sim is not None else torch.matmul
    what = f"{m}x{n}x{k} matmul, {mode}"
    with allow_tf32(tf32):
        meas = measure(lambda: matmul(a, b), device, what=what, **timer_kwargs)
    label = sim.name if sim is not None else device
    result = MatmulResult(m, n, k, dt, mode, label, meas, _peak_for(device, mode))
    if check and result.peak_flops is not None:
        check_plausible(result.flops / result.seconds, result.peak_flops, what=what)
    return result


@reference
def matmul_sweep(sizes: Sequence[int], dtypes: Sequence[Any] = ("fp32",), device: Any = None, *,
                 progress: bool = True, **kwargs: Any) -> list[MatmulResult]:
    """``matmul_tflops`` for square matmuls of each size and dtype, with a tqdm progress bar
    (silent while nbgrader grades: a test cell that writes to stderr scores 0)."""
    from tqdm.auto import tqdm

    from .grading import grading_active

    jobs = [(dt, int(n)) for dt in dtypes for n in sizes]
    results = []
    with tqdm(total=len(jobs), desc="matmul sweep", disable=not progress or grading_active(), leave=False) as bar:
        for dt, n in jobs:
            bar.set_postfix_str(f"{dt} n={n}")
            results.append(matmul_tflops(n, n, n, dt, device, **kwargs))
            bar.update()
    return results


# --- why small matmuls are far from peak ------------------------------------------------

@dataclass(frozen=True)
class Waves:
    """How the output tiles of a GEMM fill the SMs: ``tiles`` thread blocks run ``waves``
    rounds on ``sms`` SMs; ``efficiency`` is the fraction of SM-rounds doing work."""

    tiles: int
    sms: int
    waves: int

    def __post_init__(self) -> None:
        if min(self.tiles, self.sms, self.waves) < 1 or self.tiles > self.waves * self.sms:
            raise ValueError(f"{self.tiles} tiles cannot run in {self.waves} waves on {self.sms} SMs")

    @property
    def efficiency(self) -> float:
        return self.tiles / (self.waves * self.sms)


@reference
def gemm_waves(m: int, n: int, sms: int, tile: int = 128) -> Waves:
    """A (m, n) output cut in ``tile`` x ``tile`` blocks, one block per SM at a time."""
    if min(m, n, sms, tile) < 1:
        raise ValueError(f"m, n, sms and tile must be positive, got {m}, {n}, {sms}, {tile}")
    tiles = math.ceil(m / tile) * math.ceil(n / tile)
    return Waves(tiles, sms, math.ceil(tiles / sms))


REGIMES = ("launch", "underfilled", "waves", "compute")


@reference
def gemm_regime(m: int, n: int, k: int, sms: int, peak_flops: float, *, launch_overhead_s: float = 5e-6,
                tile: int = 128, min_efficiency: float = 0.8) -> str:
    """Which limit a GEMM hits first, in a simple model of a GPU:

    - "launch": at peak the work would take less than launching a kernel does;
    - "underfilled": fewer output tiles than SMs, so some SMs have nothing to do;
    - "waves": the last wave of tiles leaves SMs idle (wave efficiency < ``min_efficiency``);
    - "compute": enough work, well spread: the GEMM can run near peak.
    """
    if gemm_flops(m, n, k) / peak_flops < launch_overhead_s:
        return "launch"
    w = gemm_waves(m, n, sms, tile)
    if w.tiles < sms:
        return "underfilled"
    if w.efficiency < min_efficiency:
        return "waves"
    return "compute"


# =======================================================================================
# A simulated asynchronous GPU
# =======================================================================================

@dataclass(frozen=True)
class Launch:
    """One piece of work a ``SimulatedGPU`` was given, and when its timeline ran it."""

    name: str
    seconds: float
    start: float          # perf_counter seconds on the device's timeline
    end: float
    tf32: bool            # TF32 allowed when it was launched
    dtype: str = ""
    shape: tuple = ()


class SimulatedEvent:
    """Like ``torch.cuda.Event``: ``record()`` puts a marker in the queue; the device stamps
    it when it gets there. ``elapsed_time`` (ms) needs both events reached, as on CUDA."""

    def __init__(self, gpu: "SimulatedGPU", enable_timing: bool = False):
        self._gpu = gpu
        self.enable_timing = enable_timing
        self._stamp: float | None = None

    def record(self, stream: Any = None) -> None:
        self._stamp = self._gpu._enqueue_marker()

    def query(self) -> bool:
        """True once the device has reached this event (or if it was never recorded)."""
        return self._stamp is None or time.perf_counter() >= self._stamp

    def synchronize(self) -> None:
        """Block the host until the device reaches this event."""
        if self._stamp is not None:
            _sleep_until(self._stamp)

    def elapsed_time(self, end_event: "SimulatedEvent") -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("elapsed_time needs events created with enable_timing=True")
        if self._stamp is None or end_event._stamp is None:
            raise RuntimeError("both events must be recorded before calculating elapsed time")
        if not (self.query() and end_event.query()):
            raise RuntimeError(
                "device not ready: the device has not reached this event yet. GPU work is "
                "asynchronous; synchronize (gpu.synchronize() or end_event.synchronize()) "
                "before elapsed_time, as with CUDA events")
        return (end_event._stamp - self._stamp) * 1e3


class SimulatedKernel:
    """A callable that launches ``seconds`` of work. Its first call first blocks the host for
    ``first_call_s`` (compiling, loading a library, allocating), as first calls do; every
    ``slow_every``-th call lasts ``slow_factor`` times longer (an interruption, a clock dip)."""

    def __init__(self, gpu: "SimulatedGPU", seconds: float, first_call_s: float = 0.0, name: str = "kernel",
                 slow_every: int = 0, slow_factor: float = 1.0):
        if seconds < 0 or first_call_s < 0 or slow_every < 0 or slow_factor <= 0:
            raise ValueError("seconds, first_call_s, slow_every must be >= 0 and slow_factor > 0")
        self.gpu, self.seconds, self.first_call_s, self.name = gpu, seconds, first_call_s, name
        self.slow_every, self.slow_factor = slow_every, slow_factor
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.calls == 1 and self.first_call_s > 0:
            time.sleep(self.first_call_s)
        slow = self.slow_every and self.calls % self.slow_every == 0
        self.gpu.launch(self.seconds * (self.slow_factor if slow else 1.0), name=self.name)


def _sleep_until(t: float) -> None:
    while True:
        left = t - time.perf_counter()
        if left <= 0:
            return
        time.sleep(left)


class SimulatedGPU:
    """An asynchronous device for machines without a GPU, with ``torch.cuda``'s timing API.

    The device is one stream: a timeline on the host's ``time.perf_counter`` clock. Work
    launched at host time t starts when the device is free (``max(t, end of the previous
    work)``) and lasts its duration; ``launch`` returns at once, like a kernel launch.
    ``synchronize()`` blocks until the timeline is done; an event is stamped where the
    timeline reaches it. So, exactly as on a GPU, ``time.perf_counter()`` around a launch
    without a synchronisation measures only the launch, and events read before a
    synchronisation are "not ready".

    ``rates`` are FLOP/s by mode for ``matmul`` (which models time, not values: it returns
    an uninitialised result); the TF32 setting in force picks "tf32" for FP32 inputs.
    ``first_launch_s`` of host time goes to the first launch (context creation), and
    ``kernel_overhead_s`` of device time to every kernel. ``launches`` records everything.

    >>> gpu = SimulatedGPU()
    >>> start, end = gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)
    >>> start.record(); gpu.launch(0.002); end.record()
    >>> start.query(), end.query()          # the host is already here; the device is not
    (True, False)
    >>> gpu.synchronize(); round(start.elapsed_time(end))    # milliseconds, as with CUDA events
    2
    """

    name = "simulated GPU"
    DEFAULT_RATES = {"fp64": 0.125e12, "fp32": 0.25e12, "tf32": 2e12, "fp16": 4e12, "bf16": 4e12}

    def __init__(self, *, rates: dict[str, float] | None = None, first_launch_s: float = 0.0,
                 kernel_overhead_s: float = 0.0):
        from .hardware import normalize_dtype

        self.rates = {normalize_dtype(k): float(v) for k, v in (rates or self.DEFAULT_RATES).items()}
        if any(v <= 0 for v in self.rates.values()):
            raise ValueError(f"rates must be positive FLOP/s, got {self.rates}")
        if first_launch_s < 0 or kernel_overhead_s < 0:
            raise ValueError("first_launch_s and kernel_overhead_s must be >= 0")
        self.first_launch_s = first_launch_s
        self.kernel_overhead_s = kernel_overhead_s
        self.launches: list[Launch] = []
        self._free_at = 0.0            # when the device finishes the work queued so far

    # the timeline
    def _enqueue_marker(self) -> float:
        return max(time.perf_counter(), self._free_at)

    def launch(self, seconds: float, *, name: str = "kernel", dtype: str = "", shape: tuple = ()) -> None:
        """Queue ``seconds`` of device work; return at once."""
        if not seconds >= 0 or not math.isfinite(seconds):
            raise ValueError(f"work must last a finite, non-negative time, got {seconds}")
        if not self.launches and self.first_launch_s > 0:
            time.sleep(self.first_launch_s)
        start = max(time.perf_counter(), self._free_at)
        self._free_at = start + self.kernel_overhead_s + seconds
        self.launches.append(Launch(name, seconds, start, self._free_at, _tf32_allowed_quiet(), dtype, shape))

    def kernel(self, seconds: float, *, first_call_s: float = 0.0, name: str = "kernel", slow_every: int = 0,
               slow_factor: float = 1.0) -> SimulatedKernel:
        """A callable launching ``seconds`` of work (see ``SimulatedKernel``)."""
        return SimulatedKernel(self, seconds, first_call_s, name, slow_every, slow_factor)

    def idle(self) -> bool:
        """True once the device has finished everything queued (``torch.cuda``: the stream's
        ``query()``); never blocks."""
        return time.perf_counter() >= self._free_at

    def synchronize(self) -> None:
        """Block the host until the device has finished everything queued."""
        _sleep_until(self._free_at)

    def Event(self, enable_timing: bool = False) -> SimulatedEvent:   # noqa: N802 - torch.cuda's spelling
        return SimulatedEvent(self, enable_timing)

    def current_device(self) -> int:
        return 0

    # work with a cost model
    def peak_flops(self, mode: Any) -> float | None:
        from .hardware import normalize_dtype

        return self.rates.get(normalize_dtype(mode))

    def matmul(self, a: Any, b: Any) -> Any:
        """Queue the time ``a @ b`` takes at this device's rate; return an (m, n) result of
        ``a``'s type and dtype whose values are not computed."""
        from .hardware import normalize_dtype

        if getattr(a, "ndim", 0) != 2 or getattr(b, "ndim", 0) != 2:
            raise ValueError(f"SimulatedGPU.matmul takes 2-D operands, got shapes "
                             f"{tuple(getattr(a, 'shape', ()))} and {tuple(getattr(b, 'shape', ()))}")
        (m, k), (k2, n) = tuple(a.shape), tuple(b.shape)
        if k != k2:
            raise ValueError(f"cannot multiply ({m}, {k}) by ({k2}, {n}): inner sizes differ")
        if a.dtype != b.dtype:
            raise ValueError(f"expected both operands to have the same dtype, got {a.dtype} and {b.dtype}")
        dt = normalize_dtype(a.dtype)
        mode = "tf32" if dt == "fp32" and _tf32_allowed_quiet() else dt
        if mode not in self.rates:
            raise ValueError(f"the simulated GPU has no rate for {mode}; it knows {sorted(self.rates)}")
        self.launch(gemm_flops(m, n, k) / self.rates[mode], name=f"matmul {mode}", dtype=dt, shape=(m, n, k))
        if hasattr(a, "new_empty"):
            return a.new_empty((m, n))
        import numpy as np

        return np.empty((m, n), dtype=a.dtype)

    # tidy use as a context manager
    def __enter__(self) -> "SimulatedGPU":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.synchronize()

    def __repr__(self) -> str:
        return f"SimulatedGPU(rates={self.rates}, launches={len(self.launches)})"


def _tf32_allowed_quiet() -> bool:
    try:
        return tf32_allowed()
    except Exception:  # noqa: BLE001 - no torch: no TF32
        return False


# =======================================================================================
# gpudl bench matmul
# =======================================================================================

def _do_bench_median(stmt: Callable[[], Any]) -> float:
    """triton.testing.do_bench's median in seconds."""
    import triton.testing

    return triton.testing.do_bench(stmt, return_mode="median") / 1e3     # ms -> s


def _timer_median(globals_: dict[str, Any], stmt_text: str, cuda: bool) -> float:
    """torch.utils.benchmark.Timer's blocked_autorange median in seconds."""
    from torch.utils.benchmark import Timer

    return Timer(stmt=stmt_text, globals=globals_).blocked_autorange(min_run_time=0.2 if cuda else 0.5).median


def matmul_benchmark(argv: Sequence[str] = ()) -> Table:
    """C = A @ B: gpudl's median next to triton's do_bench and torch's Timer, TFLOP/s, fraction of peak."""
    import numpy as np
    import torch

    from . import hardware

    dev = hardware.device()
    p = argparse.ArgumentParser(prog="gpudl bench matmul", description=matmul_benchmark.__doc__)
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--sizes", type=int, nargs="+", help="square sizes n (default: 4096 8192 on a GPU)")
    p.add_argument("--dtypes", nargs="+", default=None, help="GPU dtypes (default: fp32 tf32 fp16 bf16)")
    p.add_argument("--rounds", type=int, default=None,
                   help="interleaved rounds of the timers (default: 11 on a GPU, 1 with --quick)")
    args = p.parse_args(list(argv))
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
        rate = gemm_flops(n, n, n) / median
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
                    check_plausible(gemm_flops(n, n, n) / ours_median, peak, what=f"{n}^3 {dt} matmul")
                r = row("torch.matmul", dt, n, ours, db, tm, peak, ours_median)
                r["paired"] = statistics.median(m.median / d for m, d in zip(rounds_ours, dbs))
                r["within 2%"] = "yes" if abs(r["paired"] - 1) <= 0.02 else "NO"
                r["do_bench/do_bench"] = statistics.median(dbs2) / db
                r["gpudl spread %"] = spread([m.median for m in rounds_ours])
                r["do_bench spread %"] = spread(dbs)
                table.rows.append(r)
                del a, b
        table.notes.append(f"{spec.name if spec else 'unknown GPU'}: peaks from gpudl.hardware (dense). gpudl: CUDA "
                           "events, L2 flushed before each run; do_bench: return_mode='median' "
                           "(it flushes L2 too); torch Timer: blocked_autorange median, no L2 flush. After "
                           f"{settle_s:g} s under load, the timers take turns for {rounds} round(s), each starting a "
                           f"round in turn and each after the same {settle_s * 100:g} ms of the matmul; each figure is the median over rounds of that timer's per-round median, so "
                           "clock drift reaches all alike. 'paired' is the median over rounds of each round's ratio "
                           "gpudl/do_bench (timed within a second or two of each other); 'within 2%' judges it. "
                           "'do_bench/do_bench' times do_bench a second time each round against the first: the "
                           "disagreement of a timer with itself. 'spread %' is (max - min) / median of a timer's "
                           "per-round medians.")
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


BENCHMARKS = {"matmul": matmul_benchmark}
