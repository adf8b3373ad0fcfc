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
import math
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from .execution import Launch
from .kernel_view import FakeCuda, _t, swapped_globals
from .launch import dim3

# Kinds of findings, most serious first: a report lists them in this order.
KINDS = ("package kernel", "launch", "steps", "error", "out of bounds", "barrier", "race", "uninitialized")
_NOT_ON_GPU = {"package kernel", "launch", "steps", "error", "out of bounds"}
_PER_KIND = 3                  # findings kept per kind and launch (the rest are counted)
_PACKAGES = ("gpudl.", "gpudl_instructor.")     # kernels of the package are refused in a lab


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
    if not allow_package and getattr(fn, "__module__", "").startswith(_PACKAGES):
        report.add("package kernel", f"the launch runs {fn.__module__}.{name}, the package's kernel: the exercise is "
                                     "to write your own")
        report.checked = False
        return report
    problem = _launch_problem(g, b, limits)
    if problem:
        report.add("launch", f"{name}[{_t(g)}, {_t(b)}]: {problem}")
        report.checked = False
        return report
    launch = Launch(fn, g, b, int(sharedmem or 0), tuple(_host(a) for a in args), limits, report)
    with swapped_globals(fn):
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
    ``check=False`` only for real: large sizes), unless the checked run stopped it (an index
    out of bounds, an endless loop, an absurd grid): that launch would fault or hang the GPU,
    so it is not made. ``keep=True`` also keeps each compiled
    kernel's launch with host copies of its arguments in ``report.kept`` (for compute-sanitizer)."""
    report = Report()
    limits = limits or CheckLimits()
    import numba.cuda  # noqa: F401  - the classes patched below are numba-cuda's

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
            if not allow_package and self.py_func.__module__.startswith(_PACKAGES):
                rep.add("package kernel", f"the launch runs {self.py_func.__module__}.{self.py_func.__name__}, the "
                                          "package's kernel: the exercise is to write your own")
        report.launches.append(rep)
        # A launch the checker stopped (out of bounds, an endless loop, an absurd grid, an error)
        # would fault, hang or corrupt memory on the GPU: it is not run for real.
        if not any(f.kind in _NOT_ON_GPU for f in rep.findings):
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
