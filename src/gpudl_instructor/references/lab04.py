"""The references of lab04_cuda_programming_model, in the order the lab asks for them.

1. ``launch_shape`` (with ``grid_size`` and ``idle_threads``): blocks of M threads for n
   elements, ``(n + M - 1) // M``, and the idle threads of the last block;
2. ``global_index``: ``blockIdx * blockDim + threadIdx`` per dimension (``linear_index`` and
   ``grid_for`` build on it and on ``grid_size``);
3. to 7. the kernels, each with its host function: ``saxpy_kernel`` / ``saxpy``,
   ``add_bias_kernel`` / ``add_bias``, ``stencil_kernel`` / ``stencil`` (shared memory and a
   halo), ``matmul_kernel`` / ``matmul`` (TILE x TILE tiles, two barriers per tile),
   ``sum_kernel`` / ``array_sum`` (a tree per block, one atomic per block);
8. ``occupancy`` (the model, an ``Occupancy``) and ``occupancy_triple`` (what the exercise
   returns: blocks per SM, limiter, the four limits);
9. ``waves`` (a ``Waves``) and ``waves_pair`` (waves, efficiency);
10. ``sectors`` (with ``strided_sectors`` and ``load_efficiency``);
11. ``bank_conflicts``.

The course edition keeps the tools these need (``gpudl.cuda_model``: ``dim3``,
``thread_count``, ``LIMITS``, ``strided_addresses``, ``column_indices``, ``padded_width``,
the SM limits of ``gpudl.hardware``) and none of these answers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

import numpy as np

from gpudl.cuda_model.launch import dim3
from gpudl.cuda_model.memory import BANKS, SECTOR_BYTES, WARP_SIZE, strided_addresses
from gpudl.cuda_model.occupancy import LIMITS
from gpudl.hardware import GPUSpec, SMLimits, sm_limits
from gpudl.references import reference

from numba import cuda, float32      # after gpudl: without a GPU it chose numba-cuda's simulator

Dim = int | Sequence[int]


# --- 1. launch shape --------------------------------------------------------------------------

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
    """Threads launched beyond the ``n`` elements: blocks x M - n.

    >>> idle_threads(50_000, 256)
    176
    """
    return grid_size(n, threads_per_block) * threads_per_block - n


@reference
def launch_shape(n: int, threads_per_block: int) -> tuple[int, int]:
    """(blocks, idle threads): what exercise 1 returns."""
    return grid_size(n, threads_per_block), idle_threads(n, threads_per_block)


# --- 2. global index ----------------------------------------------------------------------------

def _coords(value: Dim, what: str) -> tuple[int, int, int]:
    parts = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(parts) <= 3 or any(isinstance(p, bool) or int(p) != p or p < 0 for p in parts):
        raise ValueError(f"{what} must be 1 to 3 non-negative integers, got {value!r}")
    return tuple(int(p) for p in parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


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


def linear_index(block_idx: Dim, block_dim: Dim, thread_idx: Dim, grid_dim: Dim) -> int:
    """The thread's number when the whole grid is laid out row-major, x fastest:
    ``x + X * (y + Y * z)`` with (X, Y) the grid's extent in threads."""
    x, y, z = global_index(block_idx, block_dim, thread_idx)
    gx, gy, _ = (g * b for g, b in zip(dim3(grid_dim), dim3(block_dim)))
    return x + gx * (y + gy * z)


def grid_for(extent: Dim, block_dim: Dim) -> tuple[int, int, int]:
    """Blocks per dimension that cover an (x, y, z) extent: ``grid_size`` in each dimension."""
    ext = [extent] if isinstance(extent, int) else list(extent)
    ext = ext + [1] * (3 - len(ext))
    return tuple(grid_size(int(e), b) for e, b in zip(ext, dim3(block_dim)))  # type: ignore[return-value]


# --- 3. to 7. the kernels ---------------------------------------------------------------------------
# Block sizes that shared arrays depend on are module constants (a shared array's size must be
# known when the kernel compiles; a name bound to a sum is a constant to numba, a sum is not).

RADIUS = 3
STENCIL_BLOCK = 128
STENCIL_HALO_BLOCK = STENCIL_BLOCK + 2 * RADIUS
TILE = 16
SUM_BLOCK = 128


@cuda.jit
def saxpy_kernel(a, x, y, out, n):
    i = cuda.grid(1)           # numba's name for blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        out[i] = a * x[i] + y[i]


@reference
def saxpy(a: float, x: np.ndarray, y: np.ndarray, threads_per_block: int = 256) -> np.ndarray:
    """a * x + y, (n + M - 1) // M blocks of M threads."""
    n = x.shape[0]
    out = np.zeros_like(x)
    saxpy_kernel[(n + threads_per_block - 1) // threads_per_block, threads_per_block](a, x, y, out, n)
    return out


@cuda.jit
def add_bias_kernel(A, b, out):
    col, row = cuda.grid(2)          # x runs along a row: consecutive threads, consecutive addresses
    if row < A.shape[0] and col < A.shape[1]:
        out[row, col] = A[row, col] + b[col]


@reference
def add_bias(A: np.ndarray, b: np.ndarray, block: tuple[int, int] = (16, 16)) -> np.ndarray:
    """A + b (b added to every row), a 2-D grid: x over columns, y over rows."""
    rows, cols = A.shape
    out = np.zeros_like(A)
    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])
    add_bias_kernel[grid, block](A, b, out)
    return out


@cuda.jit
def stencil_kernel(x, out, n):
    temp = cuda.shared.array(STENCIL_HALO_BLOCK, float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    t = cuda.threadIdx.x + RADIUS
    temp[t] = x[i] if i < n else 0.0                     # the block's own inputs
    if cuda.threadIdx.x < RADIUS:                         # the halo on both sides
        left, right = i - RADIUS, i + STENCIL_BLOCK
        temp[t - RADIUS] = x[left] if 0 <= left < n else 0.0
        temp[t + STENCIL_BLOCK] = x[right] if right < n else 0.0
    cuda.syncthreads()                                    # every input is in shared memory
    if i < n:
        s = 0.0
        for offset in range(-RADIUS, RADIUS + 1):
            s += temp[t + offset]
        out[i] = s


@reference
def stencil(x: np.ndarray) -> np.ndarray:
    """out[i] = x[i-3] + ... + x[i+3] (zeros beyond the ends)."""
    n = x.shape[0]
    out = np.zeros_like(x)
    stencil_kernel[(n + STENCIL_BLOCK - 1) // STENCIL_BLOCK, STENCIL_BLOCK](x, out, n)
    return out


@cuda.jit
def matmul_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    m, k = A.shape
    n = B.shape[1]
    acc = 0.0
    for t0 in range(0, k, TILE):
        sA[ty, tx] = A[row, t0 + tx] if row < m and t0 + tx < k else 0.0
        sB[ty, tx] = B[t0 + ty, col] if t0 + ty < k and col < n else 0.0
        cuda.syncthreads()                                # the tiles are loaded
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()                                # everyone is done with them
    if row < m and col < n:
        C[row, col] = acc


@reference
def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B with TILE x TILE blocks of threads, one output element per thread."""
    m, n = A.shape[0], B.shape[1]
    C = np.zeros((m, n), dtype=A.dtype)
    matmul_kernel[((n + TILE - 1) // TILE, (m + TILE - 1) // TILE), (TILE, TILE)](A, B, C)
    return C


@cuda.jit
def sum_kernel(x, out, n):
    s = cuda.shared.array(SUM_BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SUM_BLOCK + t
    s[t] = x[i] if i < n else 0.0
    cuda.syncthreads()
    stride = SUM_BLOCK // 2
    while stride > 0:                                     # halve the active threads each step
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])                     # one atomic per block


@reference
def array_sum(x: np.ndarray) -> float:
    """The sum of x: a shared-memory tree per block, the blocks' sums added atomically."""
    n = x.shape[0]
    out = np.zeros(1, dtype=x.dtype)
    sum_kernel[(n + SUM_BLOCK - 1) // SUM_BLOCK, SUM_BLOCK](x, out, n)
    return float(out[0])


# --- 8. occupancy -------------------------------------------------------------------------------------

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


@reference
def occupancy_triple(limits: SMLimits, threads_per_block: int, registers_per_thread: int,
                     shared_bytes: int) -> tuple[int, str, dict[str, int]]:
    """(blocks per SM, limiter, {resource: blocks it allows}): what exercise 8 returns."""
    occ = occupancy(limits, threads_per_block, registers_per_thread, shared_bytes)
    return occ.blocks_per_sm, occ.limiter, {k: int(v) for k, v in occ.limits.items()}


# --- 9. waves ---------------------------------------------------------------------------------------------

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


@reference
def waves_pair(grid: int, blocks_per_sm: int, sms: int) -> tuple[float, float]:
    """(waves, efficiency): what exercise 9 returns."""
    w = waves(grid, blocks_per_sm, sms)
    return w.waves, w.efficiency


# --- 10. sectors ------------------------------------------------------------------------------------------

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


@reference
def strided_sectors(stride: int, element_bytes: int = 4, warp_size: int = WARP_SIZE) -> int:
    """Sectors a warp touches reading with ``stride`` elements between lanes (aligned start):
    4 for FP32 at stride 1, 8 at stride 2, 32 from stride 8 on.

    >>> [strided_sectors(s) for s in (1, 2, 4, 8, 32)]
    [4, 8, 16, 32, 32]
    """
    return sectors(strided_addresses(stride, element_bytes, warp_size), element_bytes)


@reference
def load_efficiency(addresses: Iterable[int], access_bytes: int = 4) -> float:
    """Bytes the warp uses / bytes the sectors move: 1.0 coalesced, 1/32 for one byte."""
    addrs = _addresses(addresses)
    used = set()
    for a in addrs:
        used.update(range(a, a + access_bytes))
    return len(used) / (sectors(addrs, access_bytes) * SECTOR_BYTES)


# --- 11. bank conflicts -----------------------------------------------------------------------------------

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


__all__ = ["grid_size", "idle_threads", "launch_shape", "global_index", "linear_index", "grid_for",
           "RADIUS", "STENCIL_BLOCK", "STENCIL_HALO_BLOCK", "TILE", "SUM_BLOCK",
           "saxpy_kernel", "saxpy", "add_bias_kernel", "add_bias", "stencil_kernel", "stencil",
           "matmul_kernel", "matmul", "sum_kernel", "array_sum",
           "Occupancy", "occupancy", "occupancy_triple", "Waves", "waves", "waves_pair",
           "sectors", "strided_sectors", "load_efficiency", "bank_conflicts"]
