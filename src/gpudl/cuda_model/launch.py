"""Launch geometry: how many blocks cover n elements, and which element each thread owns.

A kernel launch ``k[blocks, threads]`` (CUDA C: ``k<<<blocks, threads>>>``) starts a *grid*
of blocks of threads. With one element per thread and ``M`` threads per block, ``n``
elements need ``(n + M - 1) // M`` blocks: ``n // M`` drops the tail whenever ``n`` is not
a multiple of ``M``, and the extra threads of the last block must be kept from touching
memory past the end by a guard, ``if i < n``. The lecture's vectorAdd adds 50,000 elements
with 256 threads per block: 196 blocks, 50,176 threads, 176 of them idle.

Each thread finds its element from its coordinates, ``i = blockIdx.x * blockDim.x +
threadIdx.x`` (the lecture's thread 5 of block 2 with 8 threads per block owns element 21),
and likewise in y and z for 2-D and 3-D grids (the lecture's 3 x 2 blocks of 4 x 3 threads
run 72 threads).

Public names, in reading order:
``grid_size``      blocks for n elements, M threads per block (the reference)
``idle_threads``   threads of the last block(s) beyond n
``dim3``           a launch dimension as (x, y, z)
``global_index``   a thread's global (x, y, z) from block index, block size and thread index
``linear_index``   a thread's position in row-major order of the whole grid (x fastest)
``thread_count``   threads a grid launches
``grid_for``       blocks per dimension for an (x, y, z) problem extent
"""
from __future__ import annotations

import math
from typing import Sequence

from ..references import reference

Dim = int | Sequence[int]


def _positive(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


@reference
def grid_size(n: int, threads_per_block: int) -> int:
    """Blocks of ``threads_per_block`` threads that cover ``n`` elements, one per thread:
    ``(n + M - 1) // M``, the ceiling of n / M.

    >>> grid_size(50_000, 256)
    196
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    m = _positive(threads_per_block, "threads_per_block")
    return (n + m - 1) // m


@reference
def idle_threads(n: int, threads_per_block: int) -> int:
    """Threads launched beyond the ``n`` elements: blocks x M - n (they must skip the work
    behind the guard ``if i < n``).

    >>> idle_threads(50_000, 256)
    176
    """
    return grid_size(n, threads_per_block) * threads_per_block - n


def dim3(value: Dim) -> tuple[int, int, int]:
    """A launch dimension as CUDA's dim3 (x, y, z): ``8 -> (8, 1, 1)``, ``(3, 2) -> (3, 2, 1)``."""
    if isinstance(value, int) and not isinstance(value, bool):
        parts = [value]
    else:
        try:
            parts = [int(v) for v in value]
        except TypeError:
            raise ValueError(f"a launch dimension is an int or 1 to 3 ints, got {value!r}") from None
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"a launch dimension has 1 to 3 components, got {value!r}")
    for p in parts:
        _positive(p, "each launch dimension")
    return tuple(parts + [1] * (3 - len(parts)))  # type: ignore[return-value]


@reference
def global_index(block_idx: Dim, block_dim: Dim, thread_idx: Dim) -> tuple[int, int, int]:
    """The global (x, y, z) of a thread: ``blockIdx * blockDim + threadIdx`` per dimension,
    what ``cuda.grid(3)`` returns.

    >>> global_index(2, 8, 5)      # the lecture: thread 5 of block 2, 8 threads per block
    (21, 0, 0)
    """
    bdim = dim3(block_dim)
    bidx = _coords(block_idx, "block_idx")
    tidx = _coords(thread_idx, "thread_idx")
    for t, d in zip(tidx, bdim):
        if t >= d:
            raise ValueError(f"thread index {tidx} lies outside a block of {bdim}")
    return tuple(b * d + t for b, d, t in zip(bidx, bdim, tidx))  # type: ignore[return-value]


def _coords(value: Dim, what: str) -> tuple[int, int, int]:
    parts = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(parts) <= 3 or any(isinstance(p, bool) or int(p) != p or p < 0 for p in parts):
        raise ValueError(f"{what} must be 1 to 3 non-negative integers, got {value!r}")
    return tuple(int(p) for p in parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def linear_index(block_idx: Dim, block_dim: Dim, thread_idx: Dim, grid_dim: Dim) -> int:
    """The thread's number when the whole grid is laid out row-major, x fastest:
    ``x + X * (y + Y * z)`` with (X, Y) the grid's extent in threads."""
    x, y, z = global_index(block_idx, block_dim, thread_idx)
    gx, gy, _ = (g * b for g, b in zip(dim3(grid_dim), dim3(block_dim)))
    return x + gx * (y + gy * z)


def thread_count(grid_dim: Dim, block_dim: Dim) -> int:
    """Threads a launch starts: blocks x threads per block.

    >>> thread_count((3, 2), (4, 3))   # the lecture's 6 blocks of 12 threads
    72
    """
    return math.prod(dim3(grid_dim)) * math.prod(dim3(block_dim))


def grid_for(extent: Dim, block_dim: Dim) -> tuple[int, int, int]:
    """Blocks per dimension that cover an (x, y, z) extent: ``grid_size`` in each dimension."""
    ext = [extent] if isinstance(extent, int) else list(extent)
    ext = ext + [1] * (3 - len(ext))
    return tuple(grid_size(int(e), b) for e, b in zip(ext, dim3(block_dim)))  # type: ignore[return-value]


__all__ = ["grid_size", "idle_threads", "dim3", "global_index", "linear_index", "thread_count", "grid_for"]
