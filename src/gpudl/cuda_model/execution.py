"""How the checker runs a launch: CUDA threads one at a time, barrier interval by interval.

Each CUDA thread runs on an OS thread of a small pool, but only one runs at a time: the
scheduler runs every thread of a block, in order, up to its next ``cuda.syncthreads()`` (or
its end), then the next interval. A run is therefore deterministic, and every access carries
the block, thread and barrier interval it happened in, which is what race detection needs:
two threads of one block touching one word in one interval (one writing), or threads of two
blocks touching one global element (one writing), race; atomics do not race each other.
Python's line tracer counts each thread's lines, so an endless loop stops with a message.

Public names: ``Launch`` (one checked launch: ``run()``, ``access()``, ``stop()``).
"""
from __future__ import annotations

import ast
import gc
import inspect
import linecache
import os
import re
import sys
import sysconfig
import textwrap
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .kernel_view import Array, _Abort, _AtBarrier, _dtype, _local, _t, _who, current

if TYPE_CHECKING:
    from .checker import CheckLimits, LaunchReport

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
    """One CUDA thread: its coordinates, the barriers it has passed, what it read, what it counted.

    A thread runs as a plain call of the kernel's function until it reaches a barrier, where
    ``_AtBarrier`` unwinds it. To go on past barrier ``k`` it is called again and *replayed*:
    its reads return what they returned the first time (``log``), its writes are skipped, and
    at its ``k``-th barrier it comes back to life. A kernel is a function of its inputs and
    indices, so the replay takes the same path; no OS thread ever waits for another."""

    def __init__(self, launch: "Launch", block: "_Block", tidx: tuple[int, int, int], lin: int):
        self.launch, self.block, self.tidx, self.lin = launch, block, tidx, lin
        self.state = "new"               # new, barrier, done, aborted, error
        self.site: tuple[str, int] | None = None
        self.target = 0                  # barriers to replay up to before running live
        self.passed = 0
        self.replaying = False
        self.log: list[Any] = []         # every value a read or atomic returned, in order (replay only)
        self.logging = launch.generator is None
        self.gen: Any = None             # the running generator, when the kernel runs as one
        self.vote_kind = ""
        self.pos = 0
        self.steps = 0
        self.reads = 0
        self.writes = 0
        self.vote = False
        self.error: BaseException | None = None

    def execute(self) -> None:
        """Run until the next barrier or the end: the kernel's generator form resumed, or the
        kernel replayed up to the ``target``-th barrier and run on from there."""
        _local.ctx = self
        self.passed, self.pos = 0, 0
        self.replaying = self.target > 0 and self.gen is None and self.logging
        try:
            if not self.logging:
                self._resume()
            else:
                self.launch.fn(*self.launch.args)
                self.state = "done"
        except _AtBarrier:
            self.state = "barrier"
        except _Abort:
            self.state = "aborted"
        except BaseException as exc:  # noqa: BLE001 - whatever the kernel raises is a finding
            if isinstance(exc, (KeyboardInterrupt, SystemExit)) or type(exc).__name__ == "_CellTimeout":
                raise
            self.error = exc
            self.state = "error"
        finally:
            _local.ctx = None
        if self.replaying:                 # the function ended before the barrier it stopped at
            self.state = "error"
            self.error = RuntimeError("the thread took a different path when run again: does the kernel read "
                                      "something other than its arguments, indices and shared memory?")

    def _resume(self) -> None:
        """Advance the generator form to its next ``yield`` (a barrier) or its end."""
        try:
            if self.gen is None:
                self.gen = self.launch.generator(*self.launch.args)
                request = next(self.gen)
            else:
                votes = self.block.votes[-1]
                reply = {"count": sum(votes), "and": int(all(votes)), "or": int(any(votes))}.get(self.vote_kind)
                request = self.gen.send(reply)
        except StopIteration:
            self.state = "done"
            return
        kind, value, line = request
        self.vote_kind = kind
        self.vote = bool(value)
        self.site = (self.launch.fn.__code__.co_filename, line)
        self.state = "barrier"

    def replay(self) -> Any:
        value = self.log[self.pos]
        self.pos += 1
        return value

    def barrier(self, site: tuple[str, int]) -> int:
        """At ``cuda.syncthreads()``: come back to life at the barrier a replay stopped at, or
        stop here (live). Returns the barrier's number, for votes."""
        self.passed += 1
        if self.replaying:
            if self.passed == self.target:
                self.replaying = False
            return self.passed - 1
        self.site = site
        raise _AtBarrier()

    def trace_line(self) -> None:
        if self.replaying:
            return
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


_BARRIERS = {"syncthreads": "sync", "syncthreads_count": "count", "syncthreads_and": "and", "syncthreads_or": "or"}


def _barrier_call(node: ast.AST) -> tuple[str, ast.expr | None] | None:
    """(kind, argument) when ``node`` is ``cuda.syncthreads*(...)`` (or ``numba.cuda.``...)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _BARRIERS):
        return None
    owner = node.func.value
    if not (isinstance(owner, ast.Name) and owner.id == "cuda" or isinstance(owner, ast.Attribute)
            and owner.attr == "cuda" and isinstance(owner.value, ast.Name) and owner.value.id == "numba"):
        return None
    kind = _BARRIERS[node.func.attr]
    if (kind == "sync") != (not node.args) or len(node.args) > 1 or node.keywords:
        return None
    return kind, (node.args[0] if node.args else None)


class _Yields(ast.NodeTransformer):
    """Statement-level barriers become ``yield (kind, value, line)``."""

    def __init__(self):
        self.count = 0

    def _yield(self, call: ast.Call) -> ast.expr | None:
        found = _barrier_call(call)
        if found is None:
            return None
        kind, arg = found
        self.count += 1
        payload = ast.Tuple([ast.Constant(kind), arg or ast.Constant(None), ast.Constant(call.lineno)], ast.Load())
        return ast.Yield(payload)

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        new = self._yield(node.value) if isinstance(node.value, ast.Call) else None
        return ast.copy_location(ast.Expr(new), node) if new is not None else self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        new = self._yield(node.value) if isinstance(node.value, ast.Call) else None
        if new is None:
            return self.generic_visit(node)
        return ast.copy_location(ast.Assign(node.targets, new), node)


def generator_form(fn: Callable) -> Callable | None:
    """The kernel rewritten so that each ``cuda.syncthreads()`` is a ``yield``, which lets a
    thread stop at a barrier and go on later without an OS thread of its own. None when the
    source is not at hand, the kernel has no barrier, or a barrier is used in a form the
    rewrite does not know (then threads are replayed instead)."""
    if fn.__code__.co_freevars:
        return None
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    fdef = tree.body[0]
    fdef.decorator_list = []
    yields = _Yields()
    yields.visit(fdef)
    leftover = [n for n in ast.walk(fdef) if isinstance(n, ast.Attribute) and n.attr in _BARRIERS]
    if yields.count == 0 or leftover or any(_has_barrier(fn.__globals__.get(name)) for name in fn.__code__.co_names):
        return None
    ast.fix_missing_locations(tree)
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    namespace: dict[str, Any] = {}
    try:
        exec(compile(tree, fn.__code__.co_filename, "exec"), fn.__globals__, namespace)  # noqa: S102
    except Exception:  # noqa: BLE001 - any trouble: replay instead
        return None
    return namespace.get(fdef.name)


def _has_barrier(value: Any) -> bool:
    """Whether a device function the kernel calls has a barrier of its own."""
    py = getattr(value, "py_func", None)
    if py is None:
        return False
    try:
        return "syncthreads" in inspect.getsource(py)
    except (OSError, TypeError):
        return True


def _trace_calls(frame, event, arg):
    if event == "call" and _is_student_code(frame.f_code.co_filename):
        return _trace_lines
    return None


def _trace_lines(frame, event, arg):
    if event == "line":
        ctx = getattr(_local, "ctx", None)
        if ctx is not None:
            ctx.trace_line()
    return _trace_lines


class _Block:
    def __init__(self, launch: "Launch", bidx: tuple[int, int, int], lin: int):
        self.launch, self.bidx, self.lin = launch, bidx, lin
        self.interval = 0
        self.shared: dict[tuple[str, int], Array] = {}
        self.votes: list[list[bool]] = []          # per barrier: every thread's vote

    def shared_array(self, site: tuple[str, int], shape: Any, dtype: Any) -> Array:
        arr = self.shared.get(site)
        if arr is None:
            dt = _dtype(dtype)
            if shape == 0:
                data = np.zeros(self.launch.dynshared // dt.itemsize, dt)
            else:
                data = np.zeros(shape, dt)
            if dt.kind == "f":
                data[...] = np.nan          # what a read of a word nobody wrote gives
            arr = Array(data, _shared_name(site), "shared", self.launch, self)
            self.shared[site] = arr
        return arr


def _shared_name(site: tuple[str, int]) -> str:
    line = linecache.getline(*site).strip()
    m = re.match(r"([A-Za-z_]\w*)\s*=", line)
    return m.group(1) if m else f"shared array (line {site[1]})"


class _Race:
    """Who touched one element in the current interval (per block) and across blocks."""

    __slots__ = ("interval", "w", "r", "a", "blocks")

    def __init__(self, space: str):
        self.interval = -1
        self.w: list = []      # up to two distinct (block, thread) pairs per kind
        self.r: list = []
        self.a: list = []
        # global arrays: (block, thread) pairs of distinct blocks, per kind
        self.blocks: dict[str, list] | None = {"w": [], "r": [], "a": []} if space == "global" else None


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


class Launch:
    def __init__(self, fn: Callable, grid: tuple, block: tuple, dynshared: int, args: tuple,
                 limits: CheckLimits, report: LaunchReport):
        self.fn, self.grid, self.block, self.dynshared = fn, grid, block, dynshared
        self.limits, self.report = limits, report
        self.stopped = False
        self.steps = 0
        self.t0 = time.monotonic()
        self.deadline = self.t0 + limits.seconds
        self.races: dict[tuple[int, int], _Race] = {}
        self.generator = generator_form(fn)
        self.names = _parameter_names(fn, len(args))
        self.args = tuple(self._wrap(a, name) for a, name in zip(args, self.names))
        self.current: _Thread | None = None

    def _wrap(self, value: Any, name: str) -> Any:
        if isinstance(value, np.ndarray) and value.ndim > 0:
            self.report.reads.setdefault(name, 0)
            self.report.writes.setdefault(name, 0)
            return Array(value, name, "global", self)
        return value

    def stop(self, kind: str, message: str) -> None:
        if not self.stopped:
            self.report.add(kind, message)
        self.stopped = True
        raise _Abort()

    # Every access of a checked array comes here.
    def access(self, arr: Array, idx: tuple[int, ...], kind: str) -> None:
        ctx = current()
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

    def _race(self, arr: Array, idx: tuple[int, ...], kind: str, ctx: _Thread) -> None:
        key = (id(arr), _flat(idx, arr._a.shape))
        st = self.races.get(key)
        if st is None:
            st = self.races[key] = _Race(arr._space)
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
        gx, gy, gz = self.grid
        bx, by, bz = self.block
        busiest_r = busiest_w = None
        previous = sys.gettrace()
        collecting = gc.isenabled()
        gc.disable()                       # the access log allocates much and frees nothing till the end
        sys.settrace(_trace_calls)
        try:
            for lin_b, bidx in enumerate((x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)):
                block = _Block(self, bidx, lin_b)
                threads = [_Thread(self, block, (x, y, z), x + bx * (y + by * z))
                           for z in range(bz) for y in range(by) for x in range(bx)]
                self._run_block(block, threads)
                for th in threads:
                    if busiest_r is None or th.reads > busiest_r.reads:
                        busiest_r = th
                    if busiest_w is None or th.writes > busiest_w.writes:
                        busiest_w = th
                self.report.intervals = max(self.report.intervals, block.interval + 1)
                if self.stopped:
                    break
        finally:
            sys.settrace(previous)
            if collecting:
                gc.enable()
            _local.ctx = None
            self.report.steps = self.steps
        if busiest_r is not None:
            self.report.max_reads_per_thread = busiest_r.reads
            self.report.busiest_reader = _who(busiest_r)
            self.report.max_writes_per_thread = busiest_w.writes
            self.report.busiest_writer = _who(busiest_w)

    def _run_block(self, block: _Block, threads: list[_Thread]) -> None:
        running = threads
        while running and not self.stopped:
            for th in running:
                th.execute()
                if th.state == "error":
                    exc = th.error
                    self.report.add("error", f"{_who(th)} raised {type(exc).__name__}: {exc}{_error_line(exc)}")
                    self.stopped = True
                if self.stopped:
                    return
            waiting = [t for t in threads if t.state == "barrier"]
            if not waiting:
                return
            self._judge_barrier(block, threads, waiting)
            block.votes.append([t.vote for t in waiting])
            block.interval += 1
            for t in waiting:
                t.target += 1
            running = waiting

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



__all__ = ["Launch"]
