"""Launch geometry: grids of blocks of threads, and CUDA's dim3.

A kernel launch ``k[blocks, threads]`` (CUDA C: ``k<<<blocks, threads>>>``) starts a *grid*
of blocks of threads. With one element per thread and ``M`` threads per block, ``n``
elements need enough blocks to cover them; the extra threads of the last block are kept from
touching memory past the end by a guard, ``if i < n``. Each thread finds its element from its
coordinates: ``threadIdx`` (its place in the block), ``blockIdx`` (its block's place in the
grid) and ``blockDim`` (the block's size), in x, y and z. Lab 04 has you write the sizing and
the indexing; this module keeps the launch's bookkeeping.

Public names, in reading order:
``dim3``           a launch dimension as (x, y, z)
``thread_count``   threads a grid launches (the lecture's 3 x 2 blocks of 4 x 3 threads: 72)
"""
from __future__ import annotations

import math
from typing import Sequence

Dim = int | Sequence[int]


def _positive(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return value


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


def thread_count(grid_dim: Dim, block_dim: Dim) -> int:
    """Threads a launch starts: blocks x threads per block.

    >>> thread_count((3, 2), (4, 3))   # the lecture's 6 blocks of 12 threads
    72
    """
    return math.prod(dim3(grid_dim)) * math.prod(dim3(block_dim))


__all__ = ["dim3", "thread_count"]
