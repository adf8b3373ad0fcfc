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

Lab 04 has you count the sectors and the conflicts; this module keeps the warp's addresses.

Public names, in reading order:
``strided_addresses`` byte addresses of a warp reading with a stride
``column_indices``    word indices of a warp reading down a column of a row-major tile
``padded_width``      the narrowest row width >= width whose columns spread over every bank
``SECTOR_BYTES``, ``BANKS``, ``BANK_BYTES``, ``WARP_SIZE``
"""
from __future__ import annotations

import math

SECTOR_BYTES = 32
WARP_SIZE = 32
BANKS = 32
BANK_BYTES = 4


def strided_addresses(stride: int, element_bytes: int = 4, warp_size: int = WARP_SIZE,
                      offset: int = 0) -> list[int]:
    """Byte addresses of a warp whose lane ``k`` reads element ``offset + k * stride``."""
    if isinstance(stride, bool) or not isinstance(stride, int) or stride < 0:
        raise ValueError(f"stride must be a non-negative integer, got {stride!r}")
    return [(offset + lane * stride) * element_bytes for lane in range(warp_size)]


def column_indices(width: int, column: int = 0, rows: int = WARP_SIZE) -> list[int]:
    """Word indices of ``rows`` threads reading one column of a row-major tile ``width`` wide."""
    return [r * width + column for r in range(rows)]


def padded_width(width: int, banks: int = BANKS) -> int:
    """The narrowest row width >= ``width`` that has no common factor with the ``banks``:
    a warp reading down a column of such a tile meets every bank once (32 -> 33)."""
    w = width
    while math.gcd(w, banks) != 1:
        w += 1
    return w


__all__ = ["strided_addresses", "column_indices", "padded_width", "SECTOR_BYTES", "BANKS", "BANK_BYTES", "WARP_SIZE"]
