"""Occupancy: how many blocks of a kernel one SM holds at once, what limits it, and waves.

A block stays on one SM from start to end, and an SM runs several blocks at once as long as
four resources last: block slots, warp slots, registers and shared memory. Each gives a
limit in blocks; the smallest is the occupancy and its resource the *limiter*. The lecture's
Nsight Compute table is a kernel of 128 threads per block, 17 registers per thread and 20
bytes of shared memory on an 80-SM Volta GPU: limits of 32 blocks (slots), 21 (registers),
16 (warps: 64 per SM / 4 per block) and 384 (shared memory), so 16 blocks per SM.

The hardware allocates in units, and the units are what make 17 registers cost like 24:

- registers go to a *warp*, rounded up to 256 (17 x 32 = 544 -> 768), from one of four
  sub-partitions of the register file (16,384 registers each, one per warp scheduler):
  16,384 // 768 = 21 warps per sub-partition, 84 warps per SM, 21 blocks of 4 warps;
- shared memory goes to a block, rounded up to 256 bytes (128 from Ampere on, which also
  reserves 1 KB per block for the driver), out of the SM's carve-out of its L1 (96 KB on
  Volta: 98,304 // 256 = 384 blocks).

A grid of more blocks than the GPU holds at once runs in *waves*: the lecture's 4,132 blocks
at 16 blocks per SM on 80 SMs are 4,132 / 1,280 = 3.23 waves, and 12 blocks on 8 SMs at one
block per SM are a full wave and a half-empty one, 75% of the GPU's slots used overall.

Lab 04 has you compute the four limits and the waves; this module keeps their names and the
GPU's capacity (the SMs' limits themselves are data in ``gpudl.hardware``: ``sm_limits``).

Public names, in reading order:
``LIMITS``           the names of the four limits, in the order they are reported
``resident_threads`` threads a whole GPU holds at once (A100: 108 x 2048 = 221,184)
"""
from __future__ import annotations

from ..hardware import GPUSpec, get_spec, sm_limits

LIMITS = ("blocks", "warps", "registers", "shared memory")


def resident_threads(spec: GPUSpec | str) -> int:
    """Threads the whole GPU holds at once: SMs x max threads per SM (A100: 221,184)."""
    s = get_spec(spec)
    return s.sms * sm_limits(s).max_threads_per_sm


__all__ = ["LIMITS", "resident_threads"]
