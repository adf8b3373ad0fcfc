"""What a kernel sees while the checker runs it: arrays that record every access, and ``cuda``.

``gpudl.cuda_model.checker`` runs a numba-cuda kernel's Python source with the module's
``cuda`` (and ``numba``) replaced by ``FakeCuda`` and its array arguments wrapped: indices,
barriers, shared, local and constant arrays and atomics behave as on a GPU, and every access
goes to the launch being checked (``execution``), which records it. An index outside an
array, negative ones included, stops the launch with a message naming thread and block.

Public names: ``FakeCuda`` (the ``cuda`` a checked kernel sees), ``swapped_globals`` (puts it
in place while a kernel runs), ``current`` (the CUDA thread running on this OS thread).
"""
from __future__ import annotations

import contextlib
import inspect
import sys
import threading
from typing import Any, Callable, Iterator, Sequence

import numpy as np

# --- who: threads and blocks in messages --------------------------------------------------

def _t(coords: Sequence[int]) -> str:
    return "(" + ", ".join(str(c) for c in coords) + ")"


def _who(ctx: "Any") -> str:
    return f"thread {_t(ctx.tidx)} of block {_t(ctx.block.bidx)}"


class _Abort(BaseException):
    """Stops a checked launch from inside a thread (BaseException: `except Exception` in a
    kernel does not swallow it)."""


class _AtBarrier(BaseException):
    """Unwinds a thread that reached a barrier; it is replayed up to there to go on."""


# --- the current thread -------------------------------------------------------------------

_local = threading.local()


def current() -> "Any":
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

class Array:
    """A global or shared-memory array as a checked kernel sees it."""

    def __init__(self, data: np.ndarray, name: str, space: str, launch: Any, block: "Any" = None):
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
        shape = self._a.shape
        if type(idx) is int and len(shape) == 1:                  # the common cases, quickly
            if 0 <= idx < shape[0]:
                return (idx,)
        elif type(idx) is tuple and len(idx) == len(shape) == 2 and type(idx[0]) is int and type(idx[1]) is int:
            if 0 <= idx[0] < shape[0] and 0 <= idx[1] < shape[1]:
                return idx
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
        ctx = current()
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

    # While a thread is replayed up to the barrier it resumes at (see ``execution``), its reads
    # return what they returned the first time, and its writes, already done, are skipped.

    def __getitem__(self, idx: Any) -> Any:
        ctx = current()
        if ctx.replaying and not _is_partial(self, idx):
            return ctx.replay()
        full = self._index(idx, "read")
        if full is None:
            return _Row(self, idx if isinstance(idx, tuple) else (idx,))
        self._launch.access(self, full, "r")
        value = self._a[full]
        if ctx.logging:
            ctx.log.append(value)
        return value

    def __setitem__(self, idx: Any, value: Any) -> None:
        if current().replaying:
            return
        full = self._index(idx, "wrote")
        if full is None:
            raise TypeError(f"{self._name}[{idx!r}] = ...: index every dimension, {self._name}[i, j] = ...")
        self._launch.access(self, full, "w")
        self._a[full] = value

    def _atomic(self, idx: Any, op: Callable[[Any], Any]) -> Any:
        ctx = current()
        if ctx.replaying:
            return ctx.replay()
        full = self._index(idx, "updated atomically")
        if full is None:
            raise TypeError(f"an atomic on {self._name} needs a full index")
        self._launch.access(self, full, "a")
        old = self._a[full]
        self._a[full] = op(old)
        if ctx.logging:
            ctx.log.append(old)
        return old


def _is_partial(arr: "Array", idx: Any) -> bool:
    return (len(idx) if isinstance(idx, tuple) else 1) < arr._a.ndim


class _Row:
    """``A[i]`` of a 2-D array inside a kernel: indexing it completes the index."""

    def __init__(self, array: Array, prefix: tuple):
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

def _array_of(ary: Any) -> Array:
    if isinstance(ary, _Row):
        raise TypeError("atomics take the whole array and an index: cuda.atomic.add(arr, (i, j), v)")
    if not isinstance(ary, Array):
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
    def array(self, shape: Any, dtype: Any, alignment: Any = None) -> Array:
        frame = sys._getframe(1)
        return current().block.shared_array((frame.f_code.co_filename, frame.f_lineno), shape, dtype)


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

    threadIdx = property(lambda self: _Dim3(current().tidx))
    blockIdx = property(lambda self: _Dim3(current().block.bidx))
    blockDim = property(lambda self: _Dim3(current().launch.block))
    gridDim = property(lambda self: _Dim3(current().launch.grid))
    laneid = property(lambda self: current().lin % 32)

    def grid(self, ndim: int):
        ctx = current()
        g = [b * d + t for b, d, t in zip(ctx.block.bidx, ctx.launch.block, ctx.tidx)]
        if ndim == 1:
            return g[0]
        if ndim in (2, 3):
            return tuple(g[:ndim])
        raise ValueError(f"cuda.grid({ndim}): a grid has 1 to 3 dimensions")

    def gridsize(self, ndim: int):
        ctx = current()
        g = [a * b for a, b in zip(ctx.launch.grid, ctx.launch.block)]
        if ndim == 1:
            return g[0]
        if ndim in (2, 3):
            return tuple(g[:ndim])
        raise ValueError(f"cuda.gridsize({ndim}): a grid has 1 to 3 dimensions")

    def syncthreads(self) -> None:
        frame = sys._getframe(1)
        current().barrier((frame.f_code.co_filename, frame.f_lineno))

    def _vote(self, value: Any, reduce: Callable[[list], int]) -> int:
        ctx = current()
        ctx.vote = bool(value)
        frame = sys._getframe(2)
        passed = ctx.barrier((frame.f_code.co_filename, frame.f_lineno))
        return reduce(ctx.block.votes[passed])

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
def swapped_globals(fn: Callable) -> Iterator[None]:
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



__all__ = ["FakeCuda", "swapped_globals", "current", "Array"]
