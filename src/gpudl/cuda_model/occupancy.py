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

Public names, in reading order:
``occupancy``        blocks per SM, the limiter and each limit (the reference), as ``Occupancy``
``Occupancy``        the result: ``blocks_per_sm``, ``limiter``, ``limits``, allocations, ``fraction``
``LIMITS``           the names of the four limits, in the order they are reported
``waves``            waves and tail efficiency of a grid (the reference), as ``Waves``
``Waves``            ``waves``, ``full_waves``, ``tail_blocks``, ``wave_count``, ``efficiency``
``resident_threads`` threads a whole GPU holds at once (A100: 108 x 2048 = 221,184)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from ..hardware import GPUSpec, SMLimits, get_spec, sm_limits
from ..references import reference

LIMITS = ("blocks", "warps", "registers", "shared memory")


def _as_limits(spec: GPUSpec | SMLimits | str | tuple[int, int]) -> SMLimits:
    return spec if isinstance(spec, SMLimits) else sm_limits(spec)


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Blocks of one kernel an SM holds at once, and why no more.

    ``limits`` maps each of ``LIMITS`` to the blocks that resource alone allows (``math.inf``
    for a resource the kernel does not use); ``limiter`` is the resource whose limit is the
    smallest (``limiters``: all that tie). ``fraction`` is the achieved share of the SM's warp
    slots, what profilers call (theoretical) occupancy."""

    blocks_per_sm: int
    limiter: str
    limits: Mapping[str, float]
    warps_per_block: int
    registers_per_warp: int          # allocated, after rounding
    registers_per_block: int         # allocated
    shared_bytes_per_block: int      # allocated, after rounding (with the driver's reserve)
    shared_memory_per_sm: int        # the carve-out the limit was computed for
    max_warps_per_sm: int
    limiters: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.limiter not in LIMITS:
            raise ValueError(f"limiter must be one of {LIMITS}, got {self.limiter!r}")
        object.__setattr__(self, "limits", MappingProxyType(dict(self.limits)))

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.warps_per_block

    @property
    def fraction(self) -> float:
        """Active warps / the SM's warp slots (16 x 4 / 64 = 1.0 in the lecture's table)."""
        return self.warps_per_sm / self.max_warps_per_sm


def _shared_carveout(lim: SMLimits, per_block: int, carveout_kib: int | None) -> int:
    """The shared memory an SM sets aside for the kernel: the preferred carve-out (the
    largest, unless ``carveout_kib`` asks for less), raised to the smallest available one
    that holds one block when the preference is too small (cuda_occupancy.h's rule)."""
    options = sorted(k * 1024 for k in lim.shared_memory_carveouts_kib)
    want = lim.shared_memory_per_sm if carveout_kib is None else carveout_kib * 1024
    if want > lim.shared_memory_per_sm or want < 0:
        raise ValueError(f"carve-out of {carveout_kib} KiB: this SM offers {lim.shared_memory_carveouts_kib} KiB")
    want = next(c for c in options if c >= want)
    if want >= per_block:
        return want
    return next((c for c in options if c >= per_block), lim.shared_memory_per_sm)


@reference
def occupancy(spec: GPUSpec | SMLimits | str | tuple[int, int], threads_per_block: int,
              registers_per_thread: int, shared_bytes_per_block: int = 0, *,
              carveout_kib: int | None = None) -> Occupancy:
    """Blocks per SM of a kernel launched with ``threads_per_block`` threads, using
    ``registers_per_thread`` registers and ``shared_bytes_per_block`` bytes of shared memory
    (static plus dynamic), on ``spec`` (a GPUSpec, a name such as "V100", or its SMLimits).

    >>> occ = occupancy("V100", 128, 17, 20)          # the lecture's Nsight Compute table
    >>> occ.blocks_per_sm, occ.limiter, dict(occ.limits)
    (16, 'warps', {'blocks': 32, 'warps': 16, 'registers': 21, 'shared memory': 384})
    """
    lim = _as_limits(spec)
    t = threads_per_block
    if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= lim.max_threads_per_block:
        raise ValueError(f"threads_per_block must be 1..{lim.max_threads_per_block}, got {t!r}")
    r = registers_per_thread
    if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r <= lim.max_registers_per_thread:
        raise ValueError(f"registers_per_thread must be 0..{lim.max_registers_per_thread} "
                         f"(beyond that the compiler spills to local memory), got {r!r}")
    s = shared_bytes_per_block
    if isinstance(s, bool) or not isinstance(s, int) or s < 0:
        raise ValueError(f"shared_bytes_per_block must be a non-negative integer, got {s!r}")

    warps = -(-t // lim.warp_size)
    limits: dict[str, float] = {"blocks": lim.max_blocks_per_sm, "warps": lim.max_warps_per_sm // warps}

    # Registers: per warp, in allocation units, from one sub-partition of the register file.
    regs_per_warp = _round_up(r * lim.warp_size, lim.register_allocation_unit)
    if regs_per_warp == 0:
        limits["registers"] = math.inf
    elif regs_per_warp * _round_up(warps, lim.register_sub_partitions) > lim.registers_per_block:
        limits["registers"] = 0                   # the block cannot launch at all
    else:
        per_partition = (lim.registers_per_sm // lim.register_sub_partitions) // regs_per_warp
        limits["registers"] = per_partition * lim.register_sub_partitions // warps

    # Shared memory: per block, in allocation units, plus the driver's reserve, from the carve-out.
    per_block = _round_up(s + lim.reserved_shared_memory_per_block, lim.shared_memory_granularity)
    carveout = _shared_carveout(lim, per_block, carveout_kib)
    if per_block > lim.shared_memory_per_block_optin + lim.reserved_shared_memory_per_block:
        limits["shared memory"] = 0
    else:
        limits["shared memory"] = carveout // per_block if per_block else math.inf

    blocks = int(min(limits.values()))
    tied = tuple(name for name in LIMITS if limits[name] == blocks)
    return Occupancy(blocks_per_sm=blocks, limiter=tied[0], limits=limits, warps_per_block=warps,
                     registers_per_warp=regs_per_warp, registers_per_block=regs_per_warp * warps,
                     shared_bytes_per_block=per_block, shared_memory_per_sm=carveout,
                     max_warps_per_sm=lim.max_warps_per_sm, limiters=tied)


@dataclass(frozen=True)
class Waves:
    """A grid of ``grid`` blocks on ``sms`` SMs holding ``blocks_per_sm`` blocks each."""

    grid: int
    blocks_per_sm: int
    sms: int

    def __post_init__(self) -> None:
        for name in ("grid", "blocks_per_sm", "sms"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")

    @property
    def slots(self) -> int:
        """Blocks the whole GPU runs at once: one wave."""
        return self.blocks_per_sm * self.sms

    @property
    def waves(self) -> float:
        """grid / slots: 4,132 / (16 x 80) = 3.23."""
        return self.grid / self.slots

    @property
    def full_waves(self) -> int:
        return self.grid // self.slots

    @property
    def tail_blocks(self) -> int:
        """Blocks of the last, partial wave (0 when the grid is whole waves)."""
        return self.grid % self.slots

    @property
    def wave_count(self) -> int:
        """Waves the GPU runs, counting a partial one: ceil(grid / slots)."""
        return -(-self.grid // self.slots)

    @property
    def efficiency(self) -> float:
        """Share of the slots of all waves that hold a block: grid / (wave_count x slots);
        12 blocks on 8 SMs: 12 / 16 = 0.75."""
        return self.grid / (self.wave_count * self.slots)

    @property
    def tail_utilization(self) -> float:
        """Share of the last wave's slots in use (1.0 when the grid is whole waves)."""
        return (self.tail_blocks or self.slots) / self.slots


@reference
def waves(grid: int, blocks_per_sm: int, sms: int) -> Waves:
    """Waves of a grid: one wave is ``blocks_per_sm x sms`` blocks.

    >>> w = waves(4132, 16, 80)
    >>> round(w.waves, 2), w.wave_count
    (3.23, 4)
    >>> waves(12, 1, 8).efficiency
    0.75
    """
    return Waves(grid, blocks_per_sm, sms)


def resident_threads(spec: GPUSpec | str) -> int:
    """Threads the whole GPU holds at once: SMs x max threads per SM (A100: 221,184)."""
    s = get_spec(spec)
    return s.sms * sm_limits(s).max_threads_per_sm


__all__ = ["occupancy", "Occupancy", "LIMITS", "waves", "Waves", "resident_threads"]
