"""The kernel checker: runs a numba-cuda kernel thread by thread and reports what a GPU would not forgive.

numba-cuda's simulator runs a kernel's Python source with one OS thread per CUDA thread. It
raises on some out-of-bounds indices but wraps negative ones around (``x[-1]`` reads the last
element, where a GPU reads memory before the array), and it cannot see races: whether a
missing ``cuda.syncthreads()`` shows depends on how the operating system happens to schedule
its threads. The checker runs the same source (``kernel.py_func``) in a checking mode:

- every thread of a block runs in a fixed order up to its next barrier, so a run is
  deterministic, and every global and shared-memory access is recorded with the thread, the
  block and the *barrier interval* (the stretch between two ``cuda.syncthreads()``);
- an index outside an array, negative ones included, stops the launch with a message that
  names the thread and block ("thread (5, 0, 0) of block (2, 0, 0) wrote out[261], beyond
  n = 257: is the guard missing?");
- two threads of a block touching one shared-memory word in one interval, at least one
  writing, is a *race* (a forgotten barrier); in global memory, threads of different blocks
  touching one element, one writing, race too (blocks run in no fixed order); atomics do not
  race with each other;
- a shared-memory word read before any thread of the block wrote it is reported;
- a barrier that not every thread of the block reaches (a ``return`` before it, or a
  ``syncthreads`` inside an ``if``) is reported;
- global reads and writes are counted per thread, for a check to hold against a budget;
- a grid larger than ``max_threads``, an invalid launch, or a thread that runs more than
  ``thread_steps`` lines (an endless loop) fails at once with a message, never a hang.

``checking()`` intercepts every kernel launch in a ``with`` block (in the simulator, and on a
GPU where the compiled kernel also runs for real on the original arrays); ``run_kernel``
checks one launch directly. Kernels use the module as ``cuda`` (``from numba import cuda``),
as numba-cuda's simulator requires too.

Public names, in reading order: ``run_kernel``, ``checking``, ``Report``, ``LaunchReport``,
``Finding``, ``KINDS``, ``CheckLimits``.
"""
from __future__ import annotations

import contextlib
import inspect
import linecache
import math
import os
import re
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .launch import dim3

# Kinds of findings, most serious first: a report lists them in this order.
KINDS = ("launch", "steps", "error", "out of bounds", "barrier", "race", "uninitialized", "package kernel")
_ABORTING = {"launch", "steps", "error", "out of bounds", "package kernel"}
_PER_KIND = 3                  # findings kept per kind and launch (the rest are counted)


@dataclass(frozen=True)
class CheckLimits:
    """What one checked launch may take: threads, Python lines per thread and per launch, and
    seconds. Beyond any of them the launch stops with a finding instead of running on."""

    max_threads: int = 1 << 15
    thread_steps: int = 50_000
    launch_steps: int = 5_000_000
    seconds: float = 60.0

    def __post_init__(self) -> None:
        for name in ("max_threads", "thread_steps", "launch_steps", "seconds"):
            if getattr(self, name) <= 0:
                raise ValueError(f"CheckLimits.{name} must be positive")


@dataclass(frozen=True)
class Finding:
    """One problem: its kind (one of ``KINDS``) and a message that names thread and block."""

    kind: str
    message: str

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r}")


@dataclass
class LaunchReport:
    """What one checked launch did."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    findings: list[Finding] = field(default_factory=list)
    counted: dict[str, int] = field(default_factory=dict)       # findings per kind, kept or not
    reads: dict[str, int] = field(default_factory=dict)         # global reads per array, all threads
    writes: dict[str, int] = field(default_factory=dict)        # global writes per array
    atomics: dict[str, int] = field(default_factory=dict)       # atomic operations per array
    max_reads_per_thread: int = 0
    max_writes_per_thread: int = 0
    busiest_reader: str = ""
    busiest_writer: str = ""
    intervals: int = 1                                          # barrier intervals of the longest block
    steps: int = 0
    warp0: dict[str, dict[str, list[int]]] = field(default_factory=dict)   # byte offsets of warp 0's first accesses
    checked: bool = True

    @property
    def threads(self) -> int:
        return math.prod(self.grid) * math.prod(self.block)

    def add(self, kind: str, message: str) -> None:
        self.counted[kind] = self.counted.get(kind, 0) + 1
        if self.counted[kind] <= _PER_KIND:
            self.findings.append(Finding(kind, message))
            self.findings.sort(key=lambda f: KINDS.index(f.kind))      # the most serious first

    def as_dict(self) -> dict[str, Any]:
        order = {k: i for i, k in enumerate(KINDS)}
        return {
            "kernel": self.kernel, "grid": list(self.grid), "block": list(self.block), "threads": self.threads,
            "findings": [{"kind": f.kind, "message": f.message}
                         for f in sorted(self.findings, key=lambda f: order[f.kind])],
            "counted": dict(self.counted), "reads": dict(self.reads), "writes": dict(self.writes),
            "atomics": dict(self.atomics), "max_reads_per_thread": self.max_reads_per_thread,
            "max_writes_per_thread": self.max_writes_per_thread, "busiest_reader": self.busiest_reader,
            "busiest_writer": self.busiest_writer, "intervals": self.intervals, "steps": self.steps,
            "warp0": {k: {kk: list(vv) for kk, vv in v.items()} for k, v in self.warp0.items()},
            "checked": self.checked,
        }


@dataclass
class Report:
    """Every launch made under ``checking()``, in order."""

    launches: list[LaunchReport] = field(default_factory=list)
    kept: list[tuple[Any, Any, Any, tuple]] = field(default_factory=list)   # (kernel, grid, block, host args)

    @property
    def findings(self) -> list[Finding]:
        order = {k: i for i, k in enumerate(KINDS)}
        return sorted((f for ln in self.launches for f in ln.findings), key=lambda f: order[f.kind])

    @property
    def ok(self) -> bool:
        return not self.findings

    def as_dict(self) -> dict[str, Any]:
        return {"launches": [ln.as_dict() for ln in self.launches]}


# --- who: threads and blocks in messages --------------------------------------------------

def _t(coords: Sequence[int]) -> str:
    return "(" + ", ".join(str(c) for c in coords) + ")"


def _who(ctx: "_Thread") -> str:
    return f"thread {_t(ctx.tidx)} of block {_t(ctx.block.bidx)}"


class _Abort(BaseException):
    """Stops a checked launch from inside a thread (BaseException: `except Exception` in a
    kernel does not swallow it)."""


# --- the current thread -------------------------------------------------------------------

_local = threading.local()


def _ctx() -> "_Thread":
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        raise RuntimeError("a checked kernel's `cuda` was used outside a launch")
    return ctx


class _Dim3(tuple):
    """threadIdx, blockIdx, blockDim, gridDim: x, y, z, and iterable."""

    def __new__(cls, coords: Sequence[int]):
        return super().__new__(cls, tuple(coords))

    x = property(lambda self: self[0])
    y = property(lambda self: self[1])
    z = property(lambda self: self[2])


def _dtype(dtype: Any) -> np.dtype:
    try:
        return np.dtype(dtype)
    except TypeError:
        return np.dtype(str(dtype))


# --- arrays that record their accesses ----------------------------------------------------

class _Array:
    """A global or shared-memory array as a checked kernel sees it."""

    def __init__(self, data: np.ndarray, name: str, space: str, launch: "_Launch", block: "_Block | None" = None):
        self._a = data
        self._name = name
        self._space = space
        self._launch = launch
        self._block = block
        self._written = np.zeros(data.shape, dtype=bool) if space == "shared" else None

    shape = property(lambda self: self._a.shape)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    dtype = property(lambda self: self._a.dtype)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self):
        raise TypeError(f"iterating over {self._name} is not something a kernel can do: index it, {self._name}[i]")

    def __array__(self, *args: Any, **kwargs: Any):
        raise TypeError(f"{self._name} was used as a whole array inside the kernel: a thread reads and writes "
                        f"one element at a time, {self._name}[i]")

    def __repr__(self) -> str:
        return f"<{self._space} array {self._name} {self._a.shape} {self._a.dtype}>"

    def _index(self, idx: Any, verb: str, prefix: tuple = ()) -> tuple[int, ...] | None:
        """The full integer index, checked; None for a partial index (a row of a 2-D array)."""
        parts = prefix + (idx if isinstance(idx, tuple) else (idx,))
        clean = []
        for p in parts:
            if isinstance(p, slice):
                raise TypeError(f"{self._name}[...] with a slice: a thread reads and writes one element at a time")
            if isinstance(p, (float, np.floating)):
                raise TypeError(f"{self._name}[{p!r}]: an index must be an integer (use // rather than /)")
            try:
                clean.append(int(p))
            except (TypeError, ValueError):
                raise TypeError(f"{self._name}[{p!r}]: an index must be an integer") from None
        if len(clean) > self._a.ndim:
            raise IndexError(f"{self._name} has {self._a.ndim} dimension(s), indexed with {len(clean)}")
        for d, (i, n) in enumerate(zip(clean, self._a.shape)):
            if i < 0 or i >= n:
                self._out_of_bounds(tuple(clean), d, verb)
        return tuple(clean) if len(clean) == self._a.ndim else None

    def _out_of_bounds(self, idx: tuple[int, ...], dim: int, verb: str) -> None:
        ctx = _ctx()
        where = f"{self._name}[{', '.join(map(str, idx))}]"
        if self._space == "shared":
            msg = (f"{_who(ctx)} {verb} {where} of shared memory, outside its shape {self._a.shape}: "
                   "is the shared array large enough for the block and its halo?")
        elif idx[dim] < 0:
            msg = (f"{_who(ctx)} {verb} {where}, a negative index: on a GPU that is memory before the array "
                   "(Python would quietly wrap around to its end): is the halo at the array's start guarded?")
        elif self._a.ndim == 1:
            msg = f"{_who(ctx)} {verb} {where}, beyond n = {self._a.shape[0]}: is the guard missing?"
        else:
            msg = (f"{_who(ctx)} {verb} {where}, outside {self._name}'s shape {self._a.shape}: is the guard missing, "
                   "or are row and column swapped?")
        ctx.launch.stop("out of bounds", msg)

    def __getitem__(self, idx: Any) -> Any:
        full = self._index(idx, "read")
        if full is None:
            return _Row(self, idx if isinstance(idx, tuple) else (idx,))
        self._launch.access(self, full, "r")
        return self._a[full]

    def __setitem__(self, idx: Any, value: Any) -> None:
        full = self._index(idx, "wrote")
        if full is None:
            raise TypeError(f"{self._name}[{idx!r}] = ...: index every dimension, {self._name}[i, j] = ...")
        self._launch.access(self, full, "w")
        self._a[full] = value

    def _atomic(self, idx: Any, op: Callable[[Any], Any]) -> Any:
        full = self._index(idx, "updated atomically")
        if full is None:
            raise TypeError(f"an atomic on {self._name} needs a full index")
        self._launch.access(self, full, "a")
        old = self._a[full]
        self._a[full] = op(old)
        return old


class _Row:
    """``A[i]`` of a 2-D array inside a kernel: indexing it completes the index."""

    def __init__(self, array: _Array, prefix: tuple):
        self._array, self._prefix = array, prefix

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape[len(self._prefix):]

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx: Any) -> Any:
        rest = idx if isinstance(idx, tuple) else (idx,)
        return self._array[self._prefix + rest]

    def __setitem__(self, idx: Any, value: Any) -> None:
        rest = idx if isinstance(idx, tuple) else (idx,)
        self._array[self._prefix + rest] = value


# --- the fake `cuda` module a checked kernel sees ------------------------------------------

def _array_of(ary: Any) -> _Array:
    if isinstance(ary, _Row):
        raise TypeError("atomics take the whole array and an index: cuda.atomic.add(arr, (i, j), v)")
    if not isinstance(ary, _Array):
        raise TypeError(f"cuda.atomic needs an array argument of the kernel or a shared array, got {type(ary).__name__}")
    return ary


class _Atomic:
    def add(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: old + val)

    def sub(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: old - val)

    def max(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: max(old, val))

    def min(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: min(old, val))

    def exch(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: val)

    def and_(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: old & val)

    def or_(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: old | val)

    def xor(self, ary, idx, val):
        return _array_of(ary)._atomic(idx, lambda old: old ^ val)

    def cas(self, ary, idx, old, val):
        return _array_of(ary)._atomic(idx, lambda cur: val if cur == old else cur)

    def compare_and_swap(self, ary, old, val):
        arr = _array_of(ary)
        return arr._atomic((0,) * arr.ndim, lambda cur: val if cur == old else cur)


class _Shared:
    def array(self, shape: Any, dtype: Any, alignment: Any = None) -> _Array:
        frame = sys._getframe(1)
        return _ctx().block.shared_array((frame.f_code.co_filename, frame.f_lineno), shape, dtype)


class _Local:
    def array(self, shape: Any, dtype: Any, alignment: Any = None) -> np.ndarray:
        return np.zeros(shape, _dtype(dtype))


class _Const:
    def array_like(self, ary: Any) -> Any:
        return ary


class FakeCuda:
    """``cuda`` inside a checked kernel: indices, barriers, shared, local and constant arrays,
    atomics. Anything else raises an error that names it."""

    shared = _Shared()
    local = _Local()
    const = _Const()
    atomic = _Atomic()
    warpsize = 32

    threadIdx = property(lambda self: _Dim3(_ctx().tidx))
    blockIdx = property(lambda self: _Dim3(_ctx().block.bidx))
    blockDim = property(lambda self: _Dim3(_ctx().launch.block))
    gridDim = property(lambda self: _Dim3(_ctx().launch.grid))
    laneid = property(lambda self: _ctx().lin % 32)

    def grid(self, ndim: int):
        ctx = _ctx()
        g = [b * d + t for b, d, t in zip(ctx.block.bidx, ctx.launch.block, ctx.tidx)]
        if ndim == 1:
            return g[0]
        if ndim in (2, 3):
            return tuple(g[:ndim])
        raise ValueError(f"cuda.grid({ndim}): a grid has 1 to 3 dimensions")

    def gridsize(self, ndim: int):
        ctx = _ctx()
        g = [a * b for a, b in zip(ctx.launch.grid, ctx.launch.block)]
        if ndim == 1:
            return g[0]
        if ndim in (2, 3):
            return tuple(g[:ndim])
        raise ValueError(f"cuda.gridsize({ndim}): a grid has 1 to 3 dimensions")

    def syncthreads(self) -> None:
        frame = sys._getframe(1)
        _ctx().barrier((frame.f_code.co_filename, frame.f_lineno))

    def _vote(self, value: Any, reduce: Callable[[list], int]) -> int:
        ctx = _ctx()
        ctx.vote = bool(value)
        frame = sys._getframe(2)
        ctx.barrier((frame.f_code.co_filename, frame.f_lineno))
        return reduce(ctx.block.votes)

    def syncthreads_count(self, value: Any) -> int:
        return self._vote(value, sum)

    def syncthreads_and(self, value: Any) -> int:
        return self._vote(value, lambda v: int(all(v)))

    def syncthreads_or(self, value: Any) -> int:
        return self._vote(value, lambda v: int(any(v)))

    def threadfence(self) -> None:
        pass

    threadfence_block = threadfence_system = threadfence

    def fma(self, a, b, c):
        return a * b + c

    def selp(self, a, b, c):
        return b if a else c

    def __getattr__(self, name: str) -> Any:
        import numba  # type: ignore  # the kernel came from numba, so numba is there

        if hasattr(numba, name) and not name.startswith("_"):   # types: cuda.float32 ...
            return getattr(numba, name)
        raise AttributeError(f"cuda.{name} is not supported by gpudl's kernel checker")


_FAKE = FakeCuda()


class _NumbaProxy:
    """``numba`` inside a checked kernel, for kernels that write ``numba.cuda.grid(1)``."""

    def __init__(self, real: Any):
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return _FAKE if name == "cuda" else getattr(self._real, name)


def _is_cuda_module(value: Any) -> bool:
    return inspect.ismodule(value) and value.__name__ == "numba.cuda"


def _is_device_function(value: Any) -> bool:
    if not hasattr(value, "py_func") or not callable(value):
        return False
    if getattr(value, "_device", False):                                   # simulator
        return True
    return bool(getattr(value, "targetoptions", {}).get("device", False))   # compiled dispatcher


@contextlib.contextmanager
def _swapped_globals(fn: Callable) -> Iterator[None]:
    """While a checked kernel runs, its module's ``cuda`` (and ``numba``) are the fake ones,
    and device functions it calls are their Python sources, so they see the fake too."""
    saved: list[tuple[dict, str, Any]] = []
    seen: set[int] = set()

    def swap(globs: dict) -> None:
        if id(globs) in seen:
            return
        seen.add(id(globs))
        for name, value in list(globs.items()):
            if _is_cuda_module(value):
                saved.append((globs, name, value))
                globs[name] = _FAKE
            elif inspect.ismodule(value) and value.__name__ == "numba":
                saved.append((globs, name, value))
                globs[name] = _NumbaProxy(value)
            elif _is_device_function(value):
                saved.append((globs, name, value))
                globs[name] = value.py_func
                swap(value.py_func.__globals__)

    swap(fn.__globals__)
    try:
        yield
    finally:
        for globs, name, value in reversed(saved):
            globs[name] = value


# --- the executor ------------------------------------------------------------------------

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = tuple({os.path.abspath(p) for key in ("stdlib", "platstdlib", "purelib", "platlib")
                       if (p := sysconfig.get_paths().get(key))} | {os.path.dirname(np.__file__)})


_STUDENT_FILES: dict[str, bool] = {}


def _is_student_code(filename: str) -> bool:
    """Whether lines of this file count as the kernel's work (not the package's, not a library's)."""
    known = _STUDENT_FILES.get(filename)
    if known is None:
        known = not (filename.startswith("<frozen") or filename.startswith(_PACKAGE_DIR)
                     or os.path.abspath(filename).startswith(_LIBRARY_DIRS))
        _STUDENT_FILES[filename] = known
    return known


class _Thread:
    """One CUDA thread: its coordinates, its state between barriers, what it counted."""

    def __init__(self, launch: "_Launch", block: "_Block", tidx: tuple[int, int, int], lin: int):
        self.launch, self.block, self.tidx, self.lin = launch, block, tidx, lin
        self.state = "new"               # new, running, barrier, done, aborted, error
        self.site: tuple[str, int] | None = None
        self.resume = threading.Semaphore(0)
        self.steps = 0
        self.reads = 0
        self.writes = 0
        self.vote = False
        self.error: BaseException | None = None

    def execute(self) -> None:
        _local.ctx = self
        self.state = "running"
        sys.settrace(self._trace_calls)
        try:
            self.launch.fn(*self.launch.args)
            self.state = "done"
        except _Abort:
            self.state = "aborted"
        except BaseException as exc:  # noqa: BLE001 - whatever the kernel raises is a finding
            self.error = exc
            self.state = "error"
        finally:
            sys.settrace(None)
            _local.ctx = None

    def _trace_calls(self, frame, event, arg):
        if event == "call" and _is_student_code(frame.f_code.co_filename):
            return self._trace_lines
        return None

    def _trace_lines(self, frame, event, arg):
        if event == "line":
            self.steps += 1
            launch = self.launch
            launch.steps += 1
            if launch.stopped:
                raise _Abort()
            if self.steps > launch.limits.thread_steps:
                launch.stop("steps", f"{_who(self)} ran {launch.limits.thread_steps:,} lines without finishing: "
                                     "an endless loop (a `while` whose condition never changes, or a loop "
                                     "that does not advance)?")
            if launch.steps > launch.limits.launch_steps or time.monotonic() > launch.deadline:
                launch.stop("steps", f"the launch ran {launch.steps:,} lines in {time.monotonic() - launch.t0:.0f} s "
                                     f"and was stopped at {_who(self)}: an endless loop, or far more work per "
                                     "thread than the exercise needs?")
        return self._trace_lines

    def barrier(self, site: tuple[str, int]) -> None:
        self.site = site
        self.state = "barrier"
        self.launch.scheduler.release()
        self.resume.acquire()
        if self.launch.stopped:
            raise _Abort()
        self.state = "running"


class _Block:
    def __init__(self, launch: "_Launch", bidx: tuple[int, int, int], lin: int):
        self.launch, self.bidx, self.lin = launch, bidx, lin
        self.interval = 0
        self.shared: dict[tuple[str, int], _Array] = {}
        self.votes: list[bool] = []

    def shared_array(self, site: tuple[str, int], shape: Any, dtype: Any) -> _Array:
        arr = self.shared.get(site)
        if arr is None:
            dt = _dtype(dtype)
            if shape == 0:
                data = np.zeros(self.launch.dynshared // dt.itemsize, dt)
            else:
                data = np.zeros(shape, dt)
            if dt.kind == "f":
                data[...] = np.nan          # what a read of a word nobody wrote gives
            arr = _Array(data, _shared_name(site), "shared", self.launch, self)
            self.shared[site] = arr
        return arr


def _shared_name(site: tuple[str, int]) -> str:
    line = linecache.getline(*site).strip()
    m = re.match(r"([A-Za-z_]\w*)\s*=", line)
    return m.group(1) if m else f"shared@{site[1]}"


class _Pool:
    """OS threads that run CUDA threads; a finished one takes the next."""

    def __init__(self):
        self.idle: list[_Worker] = []
        self.workers: list[_Worker] = []

    def start(self, job: _Thread) -> None:
        worker = self.idle.pop() if self.idle else _Worker(self)
        worker.job = job
        worker.go.release()

    def close(self) -> None:
        for w in self.workers:
            w.job = None
            w.go.release()


class _Worker(threading.Thread):
    def __init__(self, pool: _Pool):
        super().__init__(daemon=True, name="gpudl-checker")
        self.pool = pool
        self.go = threading.Semaphore(0)
        self.job: _Thread | None = None
        pool.workers.append(self)
        self.start()

    def run(self) -> None:
        while True:
            self.go.acquire()
            job = self.job
            if job is None:
                return
            job.execute()
            self.job = None
            self.pool.idle.append(self)
            job.launch.scheduler.release()


class _Race:
    """Who touched one element in the current interval (per block) and across blocks."""

    __slots__ = ("interval", "w", "r", "a", "blocks")

    def __init__(self):
        self.interval = -1
        self.w: list = []      # up to two distinct (block, thread) pairs per kind
        self.r: list = []
        self.a: list = []
        self.blocks: dict[str, list] = {"w": [], "r": [], "a": []}   # global arrays: (block, thread) of other blocks


def _note(lst: list, who: tuple, by_block: bool = False) -> None:
    """Keep up to two (block, thread) pairs: distinct threads, or threads of distinct blocks."""
    if len(lst) < 2 and all((w[0] != who[0]) if by_block else (w != who) for w in lst):
        lst.append(who)


def _other(lst: list, who: tuple, by_block: bool = False) -> tuple | None:
    for w in lst:
        if (w[0] != who[0]) if by_block else (w != who):
            return w
    return None


def _flat(idx: tuple[int, ...], shape: tuple[int, ...]) -> int:
    flat = 0
    for i, n in zip(idx, shape):
        flat = flat * n + i
    return flat


_CONFLICTS = {"w": ("w", "r", "a"), "r": ("w", "a"), "a": ("w", "r")}
_VERBS = {"w": "writes", "r": "reads", "a": "updates atomically"}


class _Launch:
    def __init__(self, fn: Callable, grid: tuple, block: tuple, dynshared: int, args: tuple,
                 limits: CheckLimits, report: LaunchReport):
        self.fn, self.grid, self.block, self.dynshared = fn, grid, block, dynshared
        self.limits, self.report = limits, report
        self.scheduler = threading.Semaphore(0)
        self.stopped = False
        self.steps = 0
        self.t0 = time.monotonic()
        self.deadline = self.t0 + limits.seconds
        self.races: dict[tuple[int, int], _Race] = {}
        self.names = _parameter_names(fn, len(args))
        self.args = tuple(self._wrap(a, name) for a, name in zip(args, self.names))
        self.current: _Thread | None = None

    def _wrap(self, value: Any, name: str) -> Any:
        if isinstance(value, np.ndarray) and value.ndim > 0:
            self.report.reads.setdefault(name, 0)
            self.report.writes.setdefault(name, 0)
            return _Array(value, name, "global", self)
        return value

    def stop(self, kind: str, message: str) -> None:
        if not self.stopped:
            self.report.add(kind, message)
        self.stopped = True
        raise _Abort()

    # Every access of a checked array comes here.
    def access(self, arr: _Array, idx: tuple[int, ...], kind: str) -> None:
        ctx = _ctx()
        name = arr._name
        if arr._space == "global":
            if kind == "r":
                ctx.reads += 1
                self.report.reads[name] += 1
            else:
                ctx.writes += 1
                if kind == "a":
                    self.report.atomics[name] = self.report.atomics.get(name, 0) + 1
                else:
                    self.report.writes[name] += 1
            if ctx.block.lin == 0 and ctx.lin < 32:
                lanes = self.report.warp0.setdefault(name, {"r": [-1] * 32, "w": [-1] * 32})
                slot = lanes["r" if kind == "r" else "w"]
                if slot[ctx.lin] < 0:
                    slot[ctx.lin] = int(sum(i * s for i, s in zip(idx, arr._a.strides)))
        elif kind == "r" and not arr._written[idx]:
            where = f"{name}[{', '.join(map(str, idx))}]"
            self.report.add("uninitialized", f"{_who(ctx)} read {where} of shared memory before any thread of the "
                                             "block wrote it: a halo not loaded, or a missing cuda.syncthreads()?")
        elif kind != "r":
            arr._written[idx] = True
        self._race(arr, idx, kind, ctx)

    def _race(self, arr: _Array, idx: tuple[int, ...], kind: str, ctx: _Thread) -> None:
        key = (id(arr), _flat(idx, arr._a.shape))
        st = self.races.get(key)
        if st is None:
            st = self.races[key] = _Race()
        block = ctx.block
        who = (block.lin, ctx.lin)
        interval = (block.lin, block.interval)
        if st.interval != interval:
            st.interval = interval
            st.w, st.r, st.a = [], [], []
        lst = getattr(st, kind)
        if who in lst and len(lst) == 1 and not (st.w if kind != "w" else st.r) and not st.a and arr._space == "shared":
            return                         # the same thread again, nobody else: nothing new to learn
        where = f"{arr._name}[{', '.join(map(str, idx))}]"
        for other_kind in _CONFLICTS[kind]:
            other = _other(getattr(st, other_kind), who)
            if other is not None:
                t_other = _t(self._coords(other)[1])
                if arr._space == "shared":
                    hint = (f"{where} of shared memory, which thread {t_other} of the same block {_VERBS[other_kind]}, "
                            "with no cuda.syncthreads() between them: which comes first depends on timing "
                            "(a missing barrier?)")
                else:
                    hint = (f"{where}, which thread {t_other} of the same block {_VERBS[other_kind]}, with no "
                            "barrier between them: does each element have one owner thread "
                            "(i = blockIdx.x * blockDim.x + threadIdx.x)?")
                self.report.add("race", f"{_who(ctx)} {_VERBS[kind]} {hint}")
                break
        _note(getattr(st, kind), who)
        if arr._space == "global":
            for other_kind in _CONFLICTS[kind]:
                other = _other(st.blocks[other_kind], who, by_block=True)
                if other is not None:
                    b_other, t_other = self._coords(other)
                    self.report.add("race", f"{_who(ctx)} {_VERBS[kind]} {where}, which thread {_t(t_other)} "
                                            f"of block {_t(b_other)} {_VERBS[other_kind]}: blocks run in no fixed "
                                            "order, so the result depends on timing (does each element have one "
                                            "owner thread? accumulate with cuda.atomic.add)")
                    break
            _note(st.blocks[kind], who, by_block=True)

    def _coords(self, who: tuple[int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        b, t = who
        gx, gy, _ = self.grid
        bx, by, _ = self.block
        return (b % gx, (b // gx) % gy, b // (gx * gy)), (t % bx, (t // bx) % by, t // (bx * by))

    def run(self) -> None:
        pool = _Pool()
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        busiest_r = busiest_w = None
        try:
            for lin_b, bidx in enumerate((x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)):
                block = _Block(self, bidx, lin_b)
                threads = [_Thread(self, block, (x, y, z), x + bx * (y + by * z))
                           for z in range(bz) for y in range(by) for x in range(bx)]
                self._run_block(pool, block, threads)
                for th in threads:
                    if busiest_r is None or th.reads > busiest_r.reads:
                        busiest_r = th
                    if busiest_w is None or th.writes > busiest_w.writes:
                        busiest_w = th
                self.report.intervals = max(self.report.intervals, block.interval + 1)
                if self.stopped:
                    break
        finally:
            pool.close()
            self.report.steps = self.steps
        if busiest_r is not None:
            self.report.max_reads_per_thread = busiest_r.reads
            self.report.busiest_reader = _who(busiest_r)
            self.report.max_writes_per_thread = busiest_w.writes
            self.report.busiest_writer = _who(busiest_w)

    def _step(self, th: _Thread, pool: _Pool) -> None:
        if th.state == "new":
            pool.start(th)
        else:
            th.resume.release()
        self.scheduler.acquire()
        if th.state == "error":
            exc = th.error
            line = _error_line(exc)
            self.report.add("error", f"{_who(th)} raised {type(exc).__name__}: {exc}{line}")
            self.stopped = True

    def _run_block(self, pool: _Pool, block: _Block, threads: list[_Thread]) -> None:
        running = threads
        try:
            while running and not self.stopped:
                for th in running:
                    self._step(th, pool)
                    if self.stopped:
                        break
                if self.stopped:
                    break
                waiting = [t for t in threads if t.state == "barrier"]
                if not waiting:
                    break
                self._judge_barrier(block, threads, waiting)
                block.votes = [t.vote for t in waiting]
                block.interval += 1
                running = waiting
        except BaseException:
            self.stopped = True            # an interrupt (the cell's time limit): stop the threads too
            raise
        finally:
            if self.stopped:
                for th in threads:         # unwind threads parked at a barrier
                    if th.state == "barrier":
                        th.resume.release()
                        self.scheduler.acquire(timeout=1.0)

    def _judge_barrier(self, block: _Block, threads: list[_Thread], waiting: list[_Thread]) -> None:
        done = [t for t in threads if t.state == "done"]
        line = waiting[0].site[1] if waiting[0].site else "?"
        if done:
            names = ", ".join(_t(t.tidx) for t in done[:3]) + (" ..." if len(done) > 3 else "")
            self.report.add("barrier", f"block {_t(block.bidx)}: threads {names} finished before the "
                                       f"cuda.syncthreads() on line {line} that thread {_t(waiting[0].tidx)} waits at; "
                                       "every thread of a block must reach every barrier (guard the loads and "
                                       "stores with `if`, do not `return` before a barrier)")
        sites = {t.site for t in waiting}
        if len(sites) > 1:
            a = waiting[0]
            b = next(t for t in waiting if t.site != a.site)
            self.report.add("barrier", f"block {_t(block.bidx)}: thread {_t(a.tidx)} waits at the cuda.syncthreads() "
                                       f"on line {a.site[1]}, thread {_t(b.tidx)} at the one on line {b.site[1]}: a "
                                       "barrier inside an `if` that threads of one block take differently")


def _error_line(exc: BaseException) -> str:
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if _is_student_code(tb.tb_frame.f_code.co_filename):
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (line {line} of the kernel)" if line else ""


def _parameter_names(fn: Callable, count: int) -> list[str]:
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return (names + [f"arg{i}" for i in range(len(names), count)])[:count]


# --- launching -------------------------------------------------------------------------

_MAX_BLOCK = (1024, 1024, 64)
_MAX_GRID = (2**31 - 1, 65535, 65535)


def _host(value: Any) -> Any:
    """A launch argument as host data: simulator arrays unwrapped, device arrays copied."""
    if hasattr(value, "_ary") and isinstance(getattr(value, "_ary"), np.ndarray):      # simulator FakeCUDAArray
        return value._ary
    item = getattr(value, "_item", None)
    if item is not None and isinstance(getattr(item, "_ary", None), np.ndarray):
        return item._ary
    if hasattr(value, "copy_to_host") and not isinstance(value, np.ndarray):
        return value.copy_to_host()
    if hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray):
        import numba.cuda  # type: ignore
        return numba.cuda.as_cuda_array(value).copy_to_host()
    return value


def _kernel_name(fn: Callable) -> str:
    return getattr(fn, "__name__", "kernel")


def run_kernel(kernel: Any, grid: Any, block: Any, *args: Any, sharedmem: int = 0,
               limits: CheckLimits | None = None, allow_package: bool = True) -> LaunchReport:
    """Check one launch ``kernel[grid, block](*args)``: run it thread by thread on host data
    (arrays are updated in place, as the launch would) and return what it did.

    ``kernel`` is a numba-cuda kernel (its ``py_func`` runs) or a plain Python function
    written against ``cuda``. With ``allow_package=False`` a kernel of the gpudl package is
    refused (a lab's exercise is to write it)."""
    limits = limits or CheckLimits()
    fn = getattr(kernel, "py_func", kernel)
    name = _kernel_name(fn)
    try:
        g, b = dim3(grid), dim3(block)
    except ValueError as exc:
        rep = LaunchReport(name, (0, 0, 0), (0, 0, 0), checked=False)
        rep.add("launch", f"{name}[{grid!r}, {block!r}]: {exc} (a grid of whole blocks is (n + M - 1) // M, "
                          "an integer)")
        return rep
    report = LaunchReport(name, g, b)
    if not allow_package and getattr(fn, "__module__", "").startswith("gpudl."):
        report.add("package kernel", f"the launch runs {fn.__module__}.{name}, the package's kernel: the exercise is "
                                     "to write your own")
        report.checked = False
        return report
    problem = _launch_problem(g, b, limits)
    if problem:
        report.add("launch", f"{name}[{_t(g)}, {_t(b)}]: {problem}")
        report.checked = False
        return report
    launch = _Launch(fn, g, b, int(sharedmem or 0), tuple(_host(a) for a in args), limits, report)
    with _swapped_globals(fn):
        launch.run()
    return report


def _launch_problem(g: tuple, b: tuple, limits: CheckLimits) -> str:
    threads_per_block = math.prod(b)
    if threads_per_block > 1024 or any(v > m for v, m in zip(b, _MAX_BLOCK)):
        return (f"a block of {threads_per_block:,} threads {_t(b)}: CUDA allows at most 1,024 threads per block "
                "(and 64 in z); the launch would fail on a GPU")
    if any(v > m for v, m in zip(g, _MAX_GRID)):
        return f"a grid of {_t(g)} blocks exceeds CUDA's limits {_t(_MAX_GRID)}"
    total = math.prod(g) * threads_per_block
    if total > limits.max_threads:
        return (f"{total:,} threads ({math.prod(g):,} blocks of {threads_per_block:,}), more than the "
                f"{limits.max_threads:,} the checker runs for this exercise: is the grid (n + M - 1) // M blocks, "
                "not n blocks?")
    return ""


@contextlib.contextmanager
def checking(limits: CheckLimits | None = None, *, check: bool = True, allow_package: bool = False,
             keep: bool = False) -> Iterator[Report]:
    """Within the block, every launch of a numba-cuda kernel is checked (``run_kernel``) and
    recorded in the ``Report`` it yields. In the simulator the checked run *is* the launch;
    with a GPU the compiled kernel then runs for real on the original arguments (with
    ``check=False`` only for real: large sizes). ``keep=True`` also keeps each compiled
    kernel's launch with host copies of its arguments in ``report.kept`` (for compute-sanitizer)."""
    report = Report()
    limits = limits or CheckLimits()
    from numba import cuda  # noqa: F401  - numba must be imported for its classes

    patches: list[tuple[type, str, Any]] = []

    def simulated_call(self, *args):
        if self._device:
            return original_sim(self, *args)
        rep = run_kernel(self, self.grid_dim, self.block_dim, *args, sharedmem=self.dynshared_size,
                         limits=limits, allow_package=allow_package)
        report.launches.append(rep)

    def real_call(self, args, launch_config):
        copies = tuple(np.array(_host(a)) if _is_array(a) else a for a in args) if (check or keep) else args
        if keep:
            report.kept.append((self, tuple(launch_config.griddim), tuple(launch_config.blockdim),
                                tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in copies)))
        if check:
            rep = run_kernel(self, launch_config.griddim, launch_config.blockdim, *copies,
                             sharedmem=launch_config.sharedmem, limits=limits, allow_package=allow_package)
        else:
            rep = LaunchReport(_kernel_name(self.py_func), tuple(launch_config.griddim),
                               tuple(launch_config.blockdim), checked=False)
            if not allow_package and self.py_func.__module__.startswith("gpudl."):
                rep.add("package kernel", f"the launch runs {self.py_func.__module__}.{self.py_func.__name__}, the "
                                          "package's kernel: the exercise is to write your own")
        report.launches.append(rep)
        if not any(f.kind == "package kernel" for f in rep.findings):
            return original_real(self, args, launch_config)

    sim = sys.modules.get("numba.cuda.simulator.kernel")
    if sim is not None and hasattr(sim, "FakeCUDAKernel"):
        original_sim = sim.FakeCUDAKernel.__call__
        patches.append((sim.FakeCUDAKernel, "__call__", original_sim))
        sim.FakeCUDAKernel.__call__ = simulated_call
    disp = sys.modules.get("numba.cuda.dispatcher")
    if disp is not None and hasattr(getattr(disp, "CUDADispatcher", None), "call"):
        original_real = disp.CUDADispatcher.call
        patches.append((disp.CUDADispatcher, "call", original_real))
        disp.CUDADispatcher.call = real_call
    try:
        yield report
    finally:
        for owner, attr, original in reversed(patches):
            setattr(owner, attr, original)


def _is_array(value: Any) -> bool:
    return (isinstance(value, np.ndarray) or hasattr(value, "copy_to_host") or hasattr(value, "_ary")
            or hasattr(value, "__cuda_array_interface__"))


__all__ = ["run_kernel", "checking", "Report", "LaunchReport", "Finding", "KINDS", "CheckLimits", "FakeCuda"]
