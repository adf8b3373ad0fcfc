"""Memory access of a warp: coalescing into 32-byte sectors, and shared-memory banks.

**Global memory.** A warp's load or store is one instruction for 32 threads; the memory
system serves it in *sectors* of 32 aligned bytes, and a sector moves whole even when one
byte of it is used (the lecture: "if only a single byte is needed, 32 bytes will be issued,
and only 1 will be used"). 32 threads reading consecutive FP32 values touch 128 bytes, 4
sectors; with stride 2 they touch 8 sectors for the same 128 useful bytes, half the
bandwidth wasted; from stride 8 on every thread has a sector of its own, 32 sectors, one
byte in eight used. Coalesced code makes consecutive threads (``threadIdx.x``) touch
consecutive addresses.

**Shared memory** is split into 32 banks of 4-byte words, word ``w`` in bank ``w % 32``. A
warp's access is served in one pass when its threads hit different banks (or the same word:
a broadcast); ``k`` different words in one bank take ``k`` passes, a *k-way bank conflict*.
Reading a column of a 32 x 32 FP32 tile hits one bank 32 times; padding each row to 33
words spreads the column over all 32 banks.

Public names, in reading order:
``sectors``           distinct 32-byte sectors a warp's accesses touch (the reference)
``strided_addresses`` byte addresses of a warp reading with a stride
``strided_sectors``   sectors of a strided warp access (the reference for a stride)
``load_efficiency``   bytes used / bytes moved by a warp access
``bank_conflicts``    the degree of conflict of a warp's shared-memory word indices (the reference)
``column_indices``    word indices of a warp reading down a column of a row-major tile
``padded_width``      the narrowest row width >= width whose columns are conflict-free
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

from ..references import reference

SECTOR_BYTES = 32
WARP_SIZE = 32
BANKS = 32
BANK_BYTES = 4


def _addresses(addresses: Iterable[int]) -> list[int]:
    out = []
    for a in addresses:
        if isinstance(a, bool) or int(a) != a or a < 0:
            raise ValueError(f"byte addresses are non-negative integers, got {a!r}")
        out.append(int(a))
    return out


@reference
def sectors(addresses: Iterable[int], access_bytes: int = 4, sector_bytes: int = SECTOR_BYTES) -> int:
    """Distinct ``sector_bytes``-aligned sectors touched when each thread of a warp accesses
    ``access_bytes`` bytes at its byte address.

    >>> sectors([4 * lane for lane in range(32)])        # 32 consecutive FP32 values
    4
    """
    if access_bytes <= 0 or sector_bytes <= 0:
        raise ValueError("access_bytes and sector_bytes must be positive")
    touched = set()
    for a in _addresses(addresses):
        touched.update(range(a // sector_bytes, (a + access_bytes - 1) // sector_bytes + 1))
    return len(touched)


def strided_addresses(stride: int, element_bytes: int = 4, warp_size: int = WARP_SIZE,
                      offset: int = 0) -> list[int]:
    """Byte addresses of a warp whose lane ``k`` reads element ``offset + k * stride``."""
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 0:
        raise ValueError(f"stride must be a non-negative integer, got {stride!r}")
    return [(offset + lane * stride) * element_bytes for lane in range(warp_size)]


@reference
def strided_sectors(stride: int, element_bytes: int = 4, warp_size: int = WARP_SIZE) -> int:
    """Sectors a warp touches reading with ``stride`` elements between lanes (aligned start):
    4 for FP32 at stride 1, 8 at stride 2, 32 from stride 8 on.

    >>> [strided_sectors(s) for s in (1, 2, 4, 8, 32)]
    [4, 8, 16, 32, 32]
    """
    return sectors(strided_addresses(stride, element_bytes, warp_size), element_bytes)


def load_efficiency(addresses: Iterable[int], access_bytes: int = 4) -> float:
    """Bytes the warp uses / bytes the sectors move: 1.0 coalesced, 1/32 for one byte."""
    addrs = _addresses(addresses)
    used = set()
    for a in addrs:
        used.update(range(a, a + access_bytes))
    return len(used) / (sectors(addrs, access_bytes) * SECTOR_BYTES)


@reference
def bank_conflicts(word_indices: Sequence[int], banks: int = BANKS) -> int:
    """The degree of conflict of one warp's shared-memory access: the largest number of
    *different* 4-byte words that fall in one bank (word ``w`` is in bank ``w % banks``);
    threads reading the same word share it (a broadcast). 1 means conflict-free.

    >>> bank_conflicts(range(32)), bank_conflicts([2 * t for t in range(32)]), bank_conflicts([0] * 32)
    (1, 2, 1)
    """
    words: dict[int, set[int]] = {}
    for w in word_indices:
        if isinstance(w, bool) or int(w) != w or w < 0:
            raise ValueError(f"word indices are non-negative integers, got {w!r}")
        words.setdefault(int(w) % banks, set()).add(int(w))
    return max((len(s) for s in words.values()), default=0)


def column_indices(width: int, column: int = 0, rows: int = WARP_SIZE) -> list[int]:
    """Word indices of ``rows`` threads reading one column of a row-major tile ``width`` wide."""
    return [r * width + column for r in range(rows)]


def padded_width(width: int, banks: int = BANKS) -> int:
    """The narrowest row width >= ``width`` whose column reads by a warp are conflict-free:
    a width with no common factor with the 32 banks (32 -> 33)."""
    w = width
    while math.gcd(w, banks) != 1:
        w += 1
    return w


__all__ = ["sectors", "strided_addresses", "strided_sectors", "load_efficiency", "bank_conflicts",
           "column_indices", "padded_width", "SECTOR_BYTES", "BANKS", "BANK_BYTES", "WARP_SIZE"]
