"""Measuring matmul FLOP/s (Unit 02): the tools of the lecture's LAB 2, done right.

The lecture times a GPU matmul with ``time.time()`` and no synchronisation, and reads
thousands of TFLOP/s for a matmul that runs at tens. This module holds what the unit measures
with; the measuring itself (counting FLOPs, timing a matmul, sweeping sizes, the regimes of
small matmuls) is the lab's to write. Here:

- the project's timers (``gpudl.timing``, re-exported: ``time_cpu``, ``time_cuda``,
  ``measure``, ``Measurement``, ``check_plausible``, ``ImplausibleMeasurementError``);
- ``allow_tf32`` sets whether FP32 matmuls may run on tensor cores in TF32, and puts the
  setting back; ``tf32_allowed`` reads it;
- ``MATMUL_DTYPES`` and ``torch_dtype``: "tf32" is a math mode of FP32 data;
- ``SimulatedGPU`` is an asynchronous device for machines without one: work is queued on
  a timeline and the host returns at once, events are stamped when the queue reaches
  them, and ``synchronize`` waits. On a CPU it shows (and lets the grader prove) what an
  unsynchronised GPU timer gets wrong; ``measure`` and ``time_cuda(api=...)`` time it.

``gpudl bench matmul`` (``gpudl.benchmarks.matmul``) sets gpudl's timer beside
``triton.testing.do_bench`` and ``torch.utils.benchmark.Timer``. ``Table`` (``gpudl.table``)
is re-exported for notebooks that print one.

Public names, in order: ``allow_tf32``, ``tf32_allowed``, ``MATMUL_DTYPES``, ``torch_dtype``,
``SimulatedGPU`` (with ``SimulatedEvent``, ``SimulatedKernel``, ``Launch``); from
``gpudl.timing``: ``Measurement``, ``time_cpu``, ``time_cuda``, ``measure``,
``ImplausibleMeasurementError``, ``check_plausible``; from ``gpudl.table``: ``Table``.
"""
from __future__ import annotations

import contextlib
import math
import time
from dataclasses import dataclass
from typing import Any, Iterator

from .table import Table
from .timing import ImplausibleMeasurementError, Measurement, check_plausible, measure, time_cpu, time_cuda

__all__ = ["allow_tf32", "tf32_allowed", "MATMUL_DTYPES", "torch_dtype", "SimulatedGPU", "SimulatedEvent",
           "SimulatedKernel", "Launch", "Measurement", "time_cpu", "time_cuda", "measure",
           "ImplausibleMeasurementError", "check_plausible", "Table"]


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


# --- matmul dtypes -------------------------------------------------------------------------

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


# --- a simulated asynchronous GPU ---------------------------------------------------------

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
        self.launch(2 * m * n * k / self.rates[mode], name=f"matmul {mode}", dtype=dt, shape=(m, n, k))
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

