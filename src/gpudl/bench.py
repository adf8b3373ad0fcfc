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

Public names: ``Measurement``, ``time_cpu``, ``time_cuda``, ``measure``, ``Table``,
``ImplausibleMeasurementError``, ``check_plausible``.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
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


_L2_BUFFERS: dict[int, Any] = {}


def _l2_flusher(device_index: int):
    """A buffer twice the size of the GPU's L2 cache; zeroing it evicts whatever was cached."""
    import torch

    if device_index not in _L2_BUFFERS:
        l2 = int(getattr(torch.cuda.get_device_properties(device_index), "L2_cache_size", 0)) or 64 * 2**20
        _L2_BUFFERS[device_index] = torch.empty(2 * l2 // 4, dtype=torch.int32, device=f"cuda:{device_index}")
    return _L2_BUFFERS[device_index]


def time_cuda(fn: Callable[[], Any], *, warmup: int = 3, min_runs: int = 10, max_runs: int = 10_000,
              budget_s: float = 1.0, rel_ci: float = 0.01, flush_l2: bool = True, batch: int = 10,
              what: str = "") -> Measurement:
    """Time GPU work with CUDA events, one pair per run.

    Before each run the L2 cache is flushed (``flush_l2``), outside the events. Runs are
    issued in batches of ``batch``; after each batch the GPU is synchronised and the events
    read, and timing stops when the median is stable, ``max_runs`` are done or
    ``budget_s`` is spent.
    """
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("time_cuda needs a CUDA device; use time_cpu (or measure) on the CPU")
    device_index = torch.cuda.current_device()
    flusher = _l2_flusher(device_index) if flush_l2 else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max_runs:
        n = min(batch, max_runs - len(times))
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for begin, end in events:
            if flusher is not None:
                flusher.zero_()
            begin.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        times.extend(b.elapsed_time(e) / 1e3 for b, e in events)   # elapsed_time is in ms
        if len(times) >= min_runs and (time.perf_counter() - start > budget_s or _stable(times, rel_ci)):
            break
    return Measurement(tuple(times), what=what, device=f"cuda:{device_index}",
                       method="cuda events" + (" + L2 flush" if flush_l2 else ""), warmup=warmup)


def measure(fn: Callable[[], Any], device: str | None = None, **kwargs: Any) -> Measurement:
    """``time_cuda`` for "cuda" (or "cuda:N"), ``time_cpu`` for "cpu"; default: gpudl's device."""
    from .hardware import device as current_device

    device = device or current_device()
    if device.startswith("cuda"):
        return time_cuda(fn, **kwargs)
    if device != "cpu":
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    cpu_kwargs = {k: v for k, v in kwargs.items() if k not in ("flush_l2", "batch")}
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
