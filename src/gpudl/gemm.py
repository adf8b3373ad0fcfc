"""GEMM, from the three-loop definition to a tiled Triton kernel, and the traffic blocking saves.

``C = A @ B`` with ``A`` (M, K) and ``B`` (K, N) is ``M N K`` fused multiply-adds, ``2 M N K``
FLOPs. Its data is only ``M K + K N + M N`` words: Level 3 BLAS does O(n) FLOPs per word, so
it can be compute-bound, *if* each word fetched from slow memory is reused many times while
it sits in fast memory. That reuse is what blocking buys (seed 004, "It's about Block matrix
access"): with ``N`` blocks per side of an ``n x n`` matrix (tiles of ``b = n / N``),

    m = (2N + 2) n^2 words moved,   q = f / m = 2 n^3 / ((2N + 2) n^2) ~ n / N = b,

and three ``b x b`` tiles must fit in the fast memory of ``M`` words: ``b <= sqrt(M / 3)``.

Public names, in order:

``gemm_flops``                  2 M N K (``gpudl.bench``'s, re-exported)
``gemm_reference``              the definition: three loops, a dot product per entry (small matrices)
``LOOP_ORDERS``, ``gemm_loops`` the same triple loop in each of its six orders
``gemm_outer``                  accumulated outer products: one column of A and one row of B at a
                                time, each element of A and B read once (seed 001)
``gemm_blocked``                block matrix access: products of tiles, edge tiles included
``naive_traffic``, ``blocked_traffic``, ``computational_intensity``, ``optimal_block``
                                the traffic model of seed 004
``Trace``, ``loop_trace``, ``blocked_trace``   the memory accesses of a loop nest, as word addresses
``CacheStats``, ``simulate_traffic``   an LRU cache (capacity, line size) that counts the words a
                                trace moves, to check the model against
``lru_capacity_for_block``, ``traffic_table``   the cache the model assumes; simulated vs modelled
``gemm_batched_loop``, ``gemm_batched``, ``gemm_batched_outer``   many small GEMMs: one call each,
                                one batched call, and a batched computation written out
``matmul_kernel``, ``matmul_triton``, ``TritonConfig``, ``TRITON_CONFIGS``, ``INTERPRETER_CONFIG``,
``best_triton_config``          the tiled Triton kernel
                                (Triton tutorial 03: tiles, masks, strides, grouped launch order,
                                FP32 accumulation), autotuned on a GPU, run by the interpreter on a CPU
``triton_vs_torch``, ``triton_block_sweep``   TFLOP/s of the kernel (autotuned, or per tile shape)
                                next to torch.matmul, on a GPU
``cpu_cache_bytes``             this CPU's cache sizes, to choose a block
``BENCHMARKS``                  ``gpudl bench gemm``
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import triton                   # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
import triton.language as tl

from .bench import gemm_flops       # 2 M N K: Unit 02's count, used here for TFLOP/s and q = f / m
from .references import reference

LOOP_ORDERS = ("ijk", "ikj", "jik", "jki", "kij", "kji")


def _check_operands(A: Any, B: Any) -> tuple[np.ndarray, np.ndarray]:
    A, B = np.asarray(A), np.asarray(B)
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"expected two matrices, got shapes {A.shape} and {B.shape}")
    if A.shape[1] != B.shape[0]:
        hint = " (did you mean A @ B.T?)" if A.shape[1] == B.shape[1] else ""
        raise ValueError(f"inner dimensions differ: A is {A.shape}, B is {B.shape}; "
                         f"A's columns must equal B's rows{hint}")
    return A, B


def _result_dtype(A: np.ndarray, B: np.ndarray) -> np.dtype:
    dt = np.result_type(A, B)
    return dt if dt.kind in "fc" else np.dtype(np.float64)


# --- the definition and its loop orders --------------------------------------------------

@reference
def gemm_reference(A: Any, B: Any) -> np.ndarray:
    """``C[i, j] = sum_k A[i, k] B[k, j]``, three Python loops (seed 001's "independent dot
    products"). For small matrices: it does M N K Python multiply-adds."""
    A, B = _check_operands(A, B)
    m, k = A.shape
    n = B.shape[1]
    a, b = A.tolist(), B.tolist()
    C = [[0.0] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            acc = 0.0
            for p in range(k):
                acc += a[i][p] * b[p][j]
            C[i][j] = acc
    return np.array(C, dtype=_result_dtype(A, B)).reshape(m, n)


@reference
def gemm_loops(A: Any, B: Any, order: str = "ijk") -> np.ndarray:
    """The triple loop ``C[i, j] += A[i, k] * B[k, j]`` nested in ``order`` (outermost first),
    one of ``LOOP_ORDERS``. Every order does the same multiply-adds; they differ in which
    element each loop walks along, so in the memory traffic (see ``loop_trace``)."""
    if order not in LOOP_ORDERS:
        raise ValueError(f"order must be one of {LOOP_ORDERS}, got {order!r}")
    A, B = _check_operands(A, B)
    m, k = A.shape
    n = B.shape[1]
    a, b = A.tolist(), B.tolist()
    C = [[0.0] * n for _ in range(m)]
    extent = {"i": m, "j": n, "k": k}
    pos = [order.index(c) for c in "ijk"]          # where i, j, k sit in the loop nest
    for idx in itertools.product(*(range(extent[c]) for c in order)):
        i, j, p = idx[pos[0]], idx[pos[1]], idx[pos[2]]
        C[i][j] += a[i][p] * b[p][j]
    return np.array(C, dtype=_result_dtype(A, B)).reshape(m, n)


@reference
def gemm_outer(A: Any, B: Any) -> np.ndarray:
    """``C = sum_k outer(A[:, k], B[k, :])``: accumulated outer products (seed 001).

    Each step reads one column of A and one row of B, once, and updates all of C: the
    accumulator is what must stay in fast memory (registers, in a GPU thread's tile)."""
    A, B = _check_operands(A, B)
    C = np.zeros((A.shape[0], B.shape[1]), dtype=_result_dtype(A, B))   # (M, N)
    for p in range(A.shape[1]):
        C += np.multiply.outer(A[:, p], B[p, :])
    return C


def _tile_sizes(block: int | Sequence[int]) -> tuple[int, int, int]:
    bm, bn, bk = (block,) * 3 if isinstance(block, (int, np.integer)) else tuple(block)
    if min(bm, bn, bk) < 1:
        raise ValueError(f"block sizes must be positive, got {block!r}")
    return int(bm), int(bn), int(bk)


@reference
def gemm_blocked(A: Any, B: Any, block: int | Sequence[int] = 256) -> np.ndarray:
    """Block matrix access (seed 004): ``C_ij += A_ik B_kj`` over tiles of ``block`` (an int,
    or ``(bm, bn, bk)``). Edge tiles are smaller when a size is not a multiple of the block.

    Each tile product is one ``np.matmul`` on views (no copies); the accumulator tile of C
    stays put while ``k`` runs, as in the model (C read and written once).
    """
    A, B = _check_operands(A, B)
    bm, bn, bk = _tile_sizes(block)
    m, k = A.shape
    n = B.shape[1]
    dtype = _result_dtype(A, B)
    if k == 0:
        return np.zeros((m, n), dtype=dtype)
    C = np.empty((m, n), dtype=dtype)                     # (M, N): every entry is written below
    for i in range(0, m, bm):
        for j in range(0, n, bn):
            acc = C[i:i + bm, j:j + bn]                   # a view of the C tile, updated in place
            np.matmul(A[i:i + bm, 0:bk], B[0:bk, j:j + bn], out=acc)
            for p in range(bk, k, bk):
                acc += A[i:i + bm, p:p + bk] @ B[p:p + bk, j:j + bn]
    return C


# --- the traffic model (seed 004) -------------------------------------------------------------

def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


@reference
def naive_traffic(n: int) -> int:
    """Words moved between slow and fast memory by the unblocked ``ijk`` loop on ``n x n``
    matrices, when fast memory holds a row of A (and a few words) but not B:
    each row of A read once (n^2), each column of B read once per row of C (n^3), each
    entry of C read and written once (2 n^2): ``n^3 + 3 n^2``, about 2 FLOPs per word."""
    n = _positive("n", n)
    return n ** 3 + 3 * n ** 2


@reference
def blocked_traffic(n: int, block: int) -> int:
    """Words moved by blocked GEMM on ``n x n`` matrices with ``block x block`` tiles (seed 004).

    With ``N = ceil(n / block)`` blocks per side: for every tile ``C_ij`` (read once, written
    once: 2 n^2 in all), the N tiles of block row ``A_i*`` and the N tiles of block column
    ``B_*j`` are read: each of A and B is read N times, ``2 N n^2``. In all
    ``(2N + 2) n^2``. Edge tiles are smaller, so the count holds for any n.
    """
    n, block = _positive("n", n), _positive("block", block)
    blocks = -(-n // block)                              # ceil(n / block)
    return (2 * blocks + 2) * n * n


@reference
def computational_intensity(n: int, block: int | None = None) -> float:
    """``q = f / m``: FLOPs per word moved, ``2 n^3 / ((2N + 2) n^2)`` blocked (about the block
    size), ``2 n^3 / (n^3 + 3 n^2)`` (about 2) unblocked (``block=None``)."""
    words = naive_traffic(n) if block is None else blocked_traffic(n, block)
    return gemm_flops(n, n, n) / words


@reference
def optimal_block(fast_memory_words: int) -> int:
    """The largest block ``b`` whose three tiles (of A, B and C) fit in fast memory:
    ``3 b^2 <= M``, so ``b = floor(sqrt(M / 3))`` (seed 004)."""
    words = _positive("fast_memory_words", fast_memory_words)
    if words < 3:
        raise ValueError(f"three tiles of even 1 word need 3 words of fast memory, got {words}")
    return math.isqrt(words // 3)


# --- the cache simulator -----------------------------------------------------------------------

@dataclass(frozen=True)
class Trace:
    """The memory accesses of a loop nest in program order: word ``addresses`` and whether each
    access is a ``write``. ``regions`` names the matrices: name -> (first word, words)."""

    addresses: np.ndarray
    writes: np.ndarray
    regions: tuple[tuple[str, int, int], ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        a, w = np.asarray(self.addresses), np.asarray(self.writes)
        if a.ndim != 1 or a.shape != w.shape:
            raise ValueError(f"addresses and writes must be 1-D of one length, got {a.shape} and {w.shape}")
        if a.size and a.min() < 0:
            raise ValueError("addresses must be non-negative")
        object.__setattr__(self, "addresses", a.astype(np.int64, copy=False))
        object.__setattr__(self, "writes", w.astype(bool, copy=False))

    def __len__(self) -> int:
        return int(self.addresses.size)


_ALIGN = 4096      # matrices start on a multiple of this many words, so every line size <= it aligns


def _layout(m: int, n: int, k: int) -> dict[str, int]:
    """Row-major A (m, k), B (k, n), C (m, n), one after the other, each aligned."""
    up = lambda x: -(-x // _ALIGN) * _ALIGN   # noqa: E731
    a0 = 0
    b0 = up(a0 + m * k)
    c0 = up(b0 + k * n)
    return {"A": a0, "B": b0, "C": c0}


def _regions(base: dict[str, int], m: int, n: int, k: int) -> tuple[tuple[str, int, int], ...]:
    return (("A", base["A"], m * k), ("B", base["B"], k * n), ("C", base["C"], m * n))


def loop_trace(n: int, order: str = "ijk", *, m: int | None = None, k: int | None = None) -> Trace:
    """Accesses of ``C[i, j] += A[i, k] * B[k, j]`` in loop order ``order``: per multiply-add,
    read A[i, k], read B[k, j], update C[i, j] (one read-modify-write access). Matrices are
    row-major; ``n`` is the size of square matrices (or pass ``m``, ``k`` for (m, k) x (k, n))."""
    if order not in LOOP_ORDERS:
        raise ValueError(f"order must be one of {LOOP_ORDERS}, got {order!r}")
    m = n if m is None else m
    k = n if k is None else k
    extent = {"i": m, "j": n, "k": k}
    grids = np.indices([extent[c] for c in order]).reshape(3, -1)   # loop indices, outermost first
    i, j, p = (grids[order.index(c)] for c in "ijk")
    base = _layout(m, n, k)
    rows = np.stack([base["A"] + i * k + p, base["B"] + p * n + j, base["C"] + i * n + j], axis=1)  # (mnk, 3)
    writes = np.zeros(rows.shape, dtype=bool)
    writes[:, 2] = True
    return Trace(rows.ravel(), writes.ravel(), _regions(base, m, n, k), f"{order} loops, {m}x{k} @ {k}x{n}")


def blocked_trace(n: int, block: int, *, m: int | None = None, k: int | None = None) -> Trace:
    """Accesses of blocked GEMM with ``block x block`` tiles (edge tiles smaller): for each
    tile triple (i, j, k blocks, k innermost), for each entry (i, j) of the C tile, read
    ``C[i, j]``, then A[i, k], B[k, j] for each k of the tile, then write ``C[i, j]``."""
    m = n if m is None else m
    k = n if k is None else k
    block = _positive("block", block)
    base = _layout(m, n, k)
    addrs, writes = [], []
    for i0 in range(0, m, block):
        for j0 in range(0, n, block):
            for p0 in range(0, k, block):
                I = np.arange(i0, min(i0 + block, m))
                J = np.arange(j0, min(j0 + block, n))
                P = np.arange(p0, min(p0 + block, k))
                ii, jj = (g.ravel() for g in np.meshgrid(I, J, indexing="ij"))
                rows = np.empty((ii.size, 2 * P.size + 2), dtype=np.int64)    # one row per C entry
                rows[:, 0] = base["C"] + ii * n + jj
                rows[:, 1:-1:2] = base["A"] + ii[:, None] * k + P[None, :]
                rows[:, 2:-1:2] = base["B"] + P[None, :] * n + jj[:, None]
                rows[:, -1] = rows[:, 0]
                w = np.zeros(rows.shape, dtype=bool)
                w[:, -1] = True
                addrs.append(rows.ravel())
                writes.append(w.ravel())
    return Trace(np.concatenate(addrs), np.concatenate(writes), _regions(base, m, n, k),
                 f"blocked, tiles {block}, {m}x{k} @ {k}x{n}")


@dataclass(frozen=True)
class CacheStats:
    """What a trace cost in a cache: line fills (misses) and dirty lines written back."""

    accesses: int
    misses: int
    writebacks: int
    capacity_words: int
    line_words: int

    def __post_init__(self) -> None:
        if min(self.accesses, self.misses, self.writebacks) < 0:
            raise ValueError("counts must be non-negative")

    @property
    def words_read(self) -> int:
        return self.misses * self.line_words

    @property
    def words_written(self) -> int:
        return self.writebacks * self.line_words

    @property
    def words(self) -> int:
        """Words moved between slow and fast memory, both directions."""
        return self.words_read + self.words_written

    @property
    def hit_rate(self) -> float:
        return 1.0 - self.misses / self.accesses if self.accesses else 1.0


def simulate_traffic(trace: Trace, capacity_words: int, line_words: int = 1) -> CacheStats:
    """Run ``trace`` through a fully associative LRU write-back cache of ``capacity_words``
    words in lines of ``line_words``, starting empty; dirty lines left at the end are written
    back (C must reach slow memory). Returns the traffic.

    Consecutive accesses to one line are merged first: the second is always a hit and does not
    change the LRU order, so the counts are exact and the loop is shorter.
    """
    line_words = _positive("line_words", line_words)
    capacity_words = _positive("capacity_words", capacity_words)
    if capacity_words % line_words:
        raise ValueError(f"capacity ({capacity_words} words) must be a whole number of lines of {line_words} words")
    lines = trace.addresses // line_words
    if lines.size == 0:
        return CacheStats(0, 0, 0, capacity_words, line_words)
    starts = np.flatnonzero(np.r_[True, lines[1:] != lines[:-1]])
    run_lines = lines[starts]
    run_writes = np.logical_or.reduceat(trace.writes, starts)
    capacity = capacity_words // line_words
    cache: OrderedDict[int, bool] = OrderedDict()       # line -> dirty, least recently used first
    misses = writebacks = 0
    for line, write in zip(run_lines.tolist(), run_writes.tolist()):
        if line in cache:
            cache.move_to_end(line)
            if write:
                cache[line] = True
        else:
            misses += 1
            if len(cache) >= capacity:
                writebacks += cache.popitem(last=False)[1]
            cache[line] = write
    writebacks += sum(cache.values())
    return CacheStats(len(trace), misses, writebacks, capacity_words, line_words)


# --- batched GEMM (seed 004: MAGMA's batched routines) -------------------------------------------

def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _check_batched(A: Any, B: Any) -> None:
    if len(A.shape) != 3 or len(B.shape) != 3:
        raise ValueError(f"expected batches of matrices (batch, m, k) and (batch, k, n), got {tuple(A.shape)} "
                         f"and {tuple(B.shape)}")
    if A.shape[0] != B.shape[0] or A.shape[2] != B.shape[1]:
        raise ValueError(f"batch sizes and inner dimensions must agree, got {tuple(A.shape)} and {tuple(B.shape)}")


def gemm_batched_loop(A: Any, B: Any) -> Any:
    """One GEMM call per matrix: ``C[b] = A[b] @ B[b]`` in a loop (NumPy arrays or torch tensors).
    Small matrices leave most of the machine idle, and every call pays its overhead (on a GPU, a
    kernel launch)."""
    _check_batched(A, B)
    if _is_torch(A):
        import torch

        C = torch.empty((A.shape[0], A.shape[1], B.shape[2]), dtype=A.dtype, device=A.device)
        for b in range(A.shape[0]):
            torch.matmul(A[b], B[b], out=C[b])
        return C
    C = np.empty((A.shape[0], A.shape[1], B.shape[2]), dtype=np.result_type(A, B))
    for b in range(A.shape[0]):
        np.matmul(A[b], B[b], out=C[b])
    return C


def gemm_batched(A: Any, B: Any) -> Any:
    """One batched call for all the matrices (``torch.bmm`` / ``np.matmul`` on 3-D arrays): the
    library spreads the matrices over the cores (on a GPU, thread blocks), like MAGMA's
    ``Batched_dgemm``."""
    _check_batched(A, B)
    if _is_torch(A):
        import torch

        return torch.bmm(A, B)
    return np.matmul(A, B)


@reference
def gemm_batched_outer(A: Any, B: Any) -> np.ndarray:
    """The batched product written out, vectorised over the batch: accumulated outer products,
    ``C += A[:, :, k, None] * B[:, None, k, :]`` for each k (a loop over k, none over the batch)."""
    A, B = np.asarray(A), np.asarray(B)
    _check_batched(A, B)
    C = np.zeros((A.shape[0], A.shape[1], B.shape[2]), dtype=np.result_type(A, B, np.float32))  # (batch, m, n)
    for p in range(A.shape[2]):
        C += A[:, :, p, None] * B[:, None, p, :]
    return C


# --- the tiled Triton kernel (Triton tutorial 03) ----------------------------------------------

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """C (M, N) = A (M, K) @ B (K, N); one program computes one BLOCK_M x BLOCK_N tile of C.

        for each tile (m, n) of C, in parallel:
            acc = zeros(BLOCK_M, BLOCK_N) in FP32
            for k in range(0, K, BLOCK_K):
                acc += A[m:m+BLOCK_M, k:k+BLOCK_K] @ B[k:k+BLOCK_K, n:n+BLOCK_N]
            C[m:m+BLOCK_M, n:n+BLOCK_N] = acc   (in C's dtype, masked at the edges)
    """
    # Grouped launch order: programs walk GROUP_M tile-rows down a column before moving right,
    # so consecutive programs share tiles of B (and a few of A) while they sit in L2.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Rows of A and columns of B past the edge wrap around (% M, % N): those loads stay in
    # bounds without a mask, and the rows they feed are never stored.
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak     # (BLOCK_M, BLOCK_K)
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn     # (BLOCK_K, BLOCK_N)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K                         # columns of A / rows of B still to go
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn     # (BLOCK_M, BLOCK_N)
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@dataclass(frozen=True)
class TritonConfig:
    """Tile sizes and compilation options of one launch of ``matmul_kernel``."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    num_warps: int = 4
    num_stages: int = 3

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "block_k"):
            v = getattr(self, name)
            if v < 16 or v & (v - 1):
                raise ValueError(f"{name} must be a power of two >= 16 (tl.dot needs it), got {v}")
        if self.group_m < 1:
            raise ValueError(f"group_m must be >= 1, got {self.group_m}")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"num_warps must be a power of two up to 16, got {self.num_warps}")

    @property
    def label(self) -> str:
        return f"{self.block_m}x{self.block_n}x{self.block_k}"

    def meta(self) -> dict[str, int]:
        return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "BLOCK_K": self.block_k, "GROUP_M": self.group_m}


# The configurations the autotuner tries on a GPU: those of Triton's tutorial 03 that suit
# FP16 on Ampere and Hopper (big tiles, 3-4 pipeline stages for large problems; smaller tiles
# so that a 1024^3 problem still has a tile for every SM).
TRITON_CONFIGS = (
    TritonConfig(128, 256, 64, 8, num_warps=8, num_stages=3),
    TritonConfig(256, 128, 64, 8, num_warps=8, num_stages=3),
    TritonConfig(64, 256, 32, 8, num_warps=4, num_stages=4),
    TritonConfig(128, 128, 64, 8, num_warps=8, num_stages=3),
    TritonConfig(128, 128, 64, 8, num_warps=4, num_stages=4),
    TritonConfig(128, 128, 32, 8, num_warps=4, num_stages=4),
    TritonConfig(128, 64, 64, 8, num_warps=4, num_stages=4),
    TritonConfig(64, 128, 64, 8, num_warps=4, num_stages=4),
    TritonConfig(128, 64, 32, 8, num_warps=4, num_stages=4),
    TritonConfig(64, 128, 32, 8, num_warps=4, num_stages=4),
    TritonConfig(64, 64, 64, 8, num_warps=4, num_stages=4),
    TritonConfig(64, 64, 32, 8, num_warps=2, num_stages=5),
)
# In the interpreter every program runs one after another in Python: few, large tiles are fastest.
INTERPRETER_CONFIG = TritonConfig(32, 32, 32, 4, num_warps=4, num_stages=1)

_autotuned = triton.autotune(
    configs=[triton.Config(c.meta(), num_warps=c.num_warps, num_stages=c.num_stages) for c in TRITON_CONFIGS],
    key=["M", "N", "K"],
)(matmul_kernel)


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def _input_precision(dtype: Any) -> str:
    """``tl.dot``'s input precision: FP32 inputs run in TF32 on tensor cores only when torch's
    matmuls would (``allow_tf32``), else in true FP32 ("ieee"). For 16-bit inputs the setting
    does nothing; they get Triton's default, "tf32", as in the tutorial."""
    import torch

    if dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32:
        return "ieee"
    return "tf32"


@reference
def matmul_triton(a: Any, b: Any, *, config: TritonConfig | None = None, out: Any = None) -> Any:
    """``a @ b`` with ``matmul_kernel`` (torch tensors, 2-D, FP16, BF16 or FP32; any strides).

    The result has the inputs' dtype (accumulation is in FP32). ``config`` fixes the tiles;
    without it a GPU autotunes over ``TRITON_CONFIGS`` (keyed on M, N, K) and the interpreter
    uses ``INTERPRETER_CONFIG``. ``out`` (M, N), when given, receives the result.
    """
    import torch

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError(f"matmul_triton takes torch tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"expected two matrices, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"a and b must share a dtype among float16, bfloat16, float32; got {a.dtype}, {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"a is on {a.device}, b on {b.device}")
    if a.dtype == torch.bfloat16 and _interpreted():
        raise TypeError("Triton's interpreter cannot multiply bfloat16 (NumPy has no bfloat16: tl.dot would read "
                        "the bits as integers); use float16 or float32 on a CPU, bfloat16 on a GPU")
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (M, N) or out.dtype != a.dtype or out.device != a.device:
        raise ValueError(f"out must be ({M}, {N}) {a.dtype} on {a.device}, got {tuple(out.shape)} {out.dtype}")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    args = (a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
    precision = _input_precision(a.dtype)
    if config is None and not _interpreted():
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
        _autotuned[grid](*args, INPUT_PRECISION=precision)
        return out
    cfg = config or INTERPRETER_CONFIG
    grid = (triton.cdiv(M, cfg.block_m) * triton.cdiv(N, cfg.block_n),)
    matmul_kernel[grid](*args, **cfg.meta(), INPUT_PRECISION=precision,
                        num_warps=cfg.num_warps, num_stages=cfg.num_stages)
    return out


def best_triton_config(M: int, N: int, K: int) -> TritonConfig | None:
    """The configuration the autotuner chose for (M, N, K) on this GPU, if it has run."""
    for key, cfg in getattr(_autotuned, "cache", {}).items():
        if tuple(key[:3]) == (M, N, K):
            kw = cfg.all_kwargs() if hasattr(cfg, "all_kwargs") else dict(cfg.kwargs)
            return TritonConfig(kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["GROUP_M"],
                                num_warps=kw.get("num_warps", 4), num_stages=kw.get("num_stages", 3))
    return None


# --- measurements -------------------------------------------------------------------------------

_TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def _peak(dtype: str) -> float | None:
    from . import hardware

    spec = hardware.detect()
    if spec is None:
        return None
    try:
        return hardware.peak_flops(spec, dtype)
    except ValueError:
        return None


def _tflops_cuda(fn: Any, flops: int, what: str, peak: float | None, budget_s: float = 1.0) -> float:
    from . import bench

    m = bench.time_cuda(fn, what=what, budget_s=budget_s)
    rate = flops / m.median
    if peak:
        bench.check_plausible(rate, peak, what=what)
    return rate / 1e12


def triton_vs_torch(n: int, dtype: str = "fp16", *, budget_s: float = 1.0) -> dict[str, Any]:
    """Median TFLOP/s of ``matmul_triton`` (autotuned) and ``torch.matmul`` (cuBLAS) on
    ``n^3`` in ``dtype``, on the GPU."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(0)
    dt = getattr(torch, _TORCH_DTYPES[dtype])
    a = torch.randn(n, n, device="cuda", generator=g).to(dt)    # (n, n)
    b = torch.randn(n, n, device="cuda", generator=g).to(dt)    # (n, n)
    ref = torch.matmul(a, b)
    got = matmul_triton(a, b)                                    # autotunes on the first call
    err = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    peak, flops = _peak(dtype), gemm_flops(n, n, n)
    tri = _tflops_cuda(lambda: matmul_triton(a, b), flops, f"matmul_triton {n}^3 {dtype}", peak, budget_s)
    cub = _tflops_cuda(lambda: torch.matmul(a, b), flops, f"torch.matmul {n}^3 {dtype}", peak, budget_s)
    best = best_triton_config(n, n, n)
    return {"n": n, "dtype": dtype, "triton TFLOP/s": tri, "cuBLAS TFLOP/s": cub, "ratio": tri / cub,
            "config": best.label if best else "", "max rel err": err}


def triton_block_sweep(n: int, configs: Sequence[TritonConfig] | None = None, dtype: str = "fp16", *,
                       budget_s: float = 0.5) -> list[dict[str, Any]]:
    """TFLOP/s of ``matmul_kernel`` at ``n^3`` for each tile configuration (default: a ladder
    from 32x32 to 128x256), on the GPU; the reference is ``torch.matmul``."""
    import torch

    configs = configs or (TritonConfig(32, 32, 32, 8, 2, 3), TritonConfig(64, 64, 32, 8, 4, 4),
                          TritonConfig(128, 64, 32, 8, 4, 4), TritonConfig(128, 128, 32, 8, 4, 4),
                          TritonConfig(128, 128, 64, 8, 8, 3), TritonConfig(128, 256, 64, 8, 8, 3))
    g = torch.Generator(device="cuda").manual_seed(0)
    dt = getattr(torch, _TORCH_DTYPES[dtype])
    a = torch.randn(n, n, device="cuda", generator=g).to(dt)
    b = torch.randn(n, n, device="cuda", generator=g).to(dt)
    peak, flops = _peak(dtype), gemm_flops(n, n, n)
    cub = _tflops_cuda(lambda: torch.matmul(a, b), flops, f"torch.matmul {n}^3", peak, budget_s)
    rows = []
    for cfg in configs:
        tf = _tflops_cuda(lambda: matmul_triton(a, b, config=cfg), flops, f"matmul_kernel {cfg.label}", peak, budget_s)
        rows.append({"tile": cfg.label, "warps": cfg.num_warps, "stages": cfg.num_stages, "n": n,
                     "TFLOP/s": tf, "cuBLAS TFLOP/s": cub, "ratio": tf / cub})
    return rows


def cpu_cache_bytes(level: int = 3, default: int = 8 * 2**20) -> int:
    """Size of this CPU's level-``level`` data cache, read from Linux's sysfs (``default`` if unknown)."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry)
            with open(os.path.join(path, "level")) as f:
                lvl = int(f.read())
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            if lvl == level and kind in ("Data", "Unified"):
                with open(os.path.join(path, "size")) as f:
                    text = f.read().strip().upper()
                scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1)
                return int(text.rstrip("KMG")) * scale
    except (OSError, ValueError):
        pass
    return default


def lru_capacity_for_block(block: int, line_words: int = 1, slack: float = 1.5) -> int:
    """The cache (words, whole lines) that holds three ``block x block`` tiles with LRU's slack.

    The model assumes fast memory holds exactly the three tiles in use. An LRU cache keeps
    the previous step's tiles of A and B until they are the oldest, so it needs about 1.5x
    that room (``slack``) before it moves only what the model says."""
    words = math.ceil(slack * 3 * _positive("block", block) ** 2)
    return -(-words // line_words) * line_words


def traffic_table(n: int = 64, blocks: Sequence[int] = (4, 8, 16, 32), *, line_words: int = 4,
                  capacity_words: int | None = None) -> list[dict[str, Any]]:
    """Simulated (LRU) vs modelled words moved by blocked GEMM on ``n x n``, for each block.

    By default each block gets the cache ``lru_capacity_for_block`` sizes for it (the model's
    fast memory); pass ``capacity_words`` to give every block the same cache instead. The
    model is exact when the line size divides ``n`` and the block; a larger cache moves no
    more (LRU misses never grow with capacity), so the model is then an upper bound."""
    rows = []
    for b in blocks:
        cap = capacity_words or lru_capacity_for_block(b, line_words)
        sim = simulate_traffic(blocked_trace(n, b), cap, line_words).words
        model = blocked_traffic(n, b)
        rows.append({"n": n, "block": b, "cache words": cap, "line words": line_words,
                     "simulated words": sim, "model words": model, "simulated/model": sim / model})
    return rows


def _bench_gemm(argv: Sequence[str] = ()) -> Any:
    """Blocked GEMM vs np.matmul, simulated vs modelled traffic, batched GEMM; Triton vs cuBLAS (GPU).

    On a GPU also a table (and figure) of the Triton kernel's TFLOP/s for several tile sizes."""
    from . import bench, hardware

    p = argparse.ArgumentParser(prog="gpudl bench gemm", description=_bench_gemm.__doc__)
    p.add_argument("--quick", action="store_true", help="smaller sizes, shorter timing")
    p.add_argument("-n", type=int, default=None, help="size of the CPU blocked GEMM (default 2048, --quick 1024)")
    p.add_argument("--block", type=int, default=None,
                   help="CPU tile size (default: optimal_block of the L3 cache in float64 words)")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per row")
    p.add_argument("--rounds", type=int, default=None, help="timed runs of each CPU GEMM (default 9, --quick 5)")
    args = p.parse_args(list(argv))
    n = args.n or (1024 if args.quick else 2048)
    budget = args.budget or (1.0 if args.quick else 4.0)
    cuda = hardware.device() == "cuda"
    table = bench.Table("GEMM blocking: blocked vs np.matmul, traffic model vs LRU simulation, batched GEMM"
                        + (", Triton vs cuBLAS" if cuda else ""))

    # 1. Blocked GEMM on the CPU: tiles chosen so that three fit in L3 (seed 004's sqrt(M / 3)).
    l3 = cpu_cache_bytes(3)
    block = args.block or optimal_block(l3 // 8)
    g = np.random.default_rng(0)
    A = g.standard_normal((n, n))      # (n, n) float64
    B = g.standard_normal((n, n))
    flops = gemm_flops(n, n, n)
    blocks = sorted({block, 256, 512})
    # One run of each in turn, round after round: a busy machine slows all of them alike.
    work = {"np.matmul": lambda: A @ B} | {f"b={b}": (lambda b=b: gemm_blocked(A, B, b)) for b in blocks}
    for fn in work.values():
        fn()                                              # warm up: threads, pages, caches
    meas: dict[str, list[float]] = {name: [] for name in work}
    for _ in range(args.rounds or (5 if args.quick else 9)):
        for name, fn in work.items():
            meas[name].extend(bench.time_cpu(fn, warmup=0, min_runs=1, max_runs=1).times)
    base = bench.Measurement(tuple(meas["np.matmul"]), what="np.matmul")
    table.rows.append({"section": "cpu blocked", "case": f"np.matmul n={n} fp64", "value": flops / base.median / 1e9,
                       "unit": "GFLOP/s", "time / np.matmul": 1.0, "runs": base.count})
    for b in blocks:
        m = bench.Measurement(tuple(meas[f"b={b}"]), what=f"gemm_blocked b={b}")
        tag = " (optimal_block of L3)" if b == block else ""
        table.rows.append({"section": "cpu blocked", "case": f"gemm_blocked n={n} b={b}{tag}",
                           "value": flops / m.median / 1e9, "unit": "GFLOP/s",
                           "time / np.matmul": m.median / base.median, "runs": m.count})
    table.notes.append(f"CPU: L3 {l3 / 2**20:.0f} MiB = {l3 // 8} float64 words -> optimal_block = {block}; "
                       "tile products are np.matmul on views; medians of interleaved runs.")

    # 2. The traffic model against an LRU simulation.
    sim_n = 48 if args.quick else 64
    traffic = traffic_table(sim_n, (4, 8, 16) if args.quick else (4, 8, 16, 32))
    table.figures["gemm_traffic"] = _traffic_figure(traffic)
    for r in traffic:
        table.rows.append({"section": "traffic", "case": f"blocked b={r['block']}, n={sim_n}, cache {r['cache words']} "
                           f"words, lines of {r['line words']}", "value": r["simulated words"], "unit": "words",
                           "model": r["model words"], "simulated / model": r["simulated/model"]})
    naive_cap = 2 * sim_n + 8
    sim = simulate_traffic(loop_trace(sim_n, "ijk"), naive_cap, 1).words
    table.rows.append({"section": "traffic", "case": f"ijk loops, n={sim_n}, cache {naive_cap} words, lines of 1",
                       "value": sim, "unit": "words", "model": naive_traffic(sim_n),
                       "simulated / model": sim / naive_traffic(sim_n)})
    table.notes.append("Traffic: LRU, write-back, fully associative; blocked model (2N+2)n^2 holds when the cache "
                       "has room for 1.5x the three tiles (LRU keeps the previous step's tiles too) and the line size "
                       "divides the block; naive model n^3+3n^2 when a row of A fits but B does not.")

    # 3. Batched small GEMMs: a loop of calls vs one call.
    batch, s = (2048, 8) if args.quick else (8192, 8)
    Ab, Bb = g.standard_normal((batch, s, s)), g.standard_normal((batch, s, s))
    loop = bench.time_cpu(lambda: gemm_batched_loop(Ab, Bb), budget_s=budget / 4, what="loop")
    one = bench.time_cpu(lambda: gemm_batched(Ab, Bb), budget_s=budget / 4, what="one call")
    table.rows.append({"section": "batched cpu", "case": f"{batch} GEMMs {s}x{s}x{s}: loop of np.matmul",
                       "value": loop.median * 1e3, "unit": "ms", "time / np.matmul": loop.median / one.median})
    table.rows.append({"section": "batched cpu", "case": f"{batch} GEMMs {s}x{s}x{s}: one np.matmul",
                       "value": one.median * 1e3, "unit": "ms", "time / np.matmul": 1.0})

    if cuda:
        import torch

        At = torch.randn(batch, s, s, device="cuda", dtype=torch.float16)
        Bt = torch.randn(batch, s, s, device="cuda", dtype=torch.float16)
        loop = bench.time_cuda(lambda: gemm_batched_loop(At, Bt), budget_s=budget / 4, flush_l2=False)
        one = bench.time_cuda(lambda: gemm_batched(At, Bt), budget_s=budget / 4, flush_l2=False)
        table.rows.append({"section": "batched gpu", "case": f"{batch} GEMMs {s}^3 fp16: loop of torch.matmul",
                           "value": loop.median * 1e3, "unit": "ms", "time / torch.bmm": loop.median / one.median})
        table.rows.append({"section": "batched gpu", "case": f"{batch} GEMMs {s}^3 fp16: one torch.bmm",
                           "value": one.median * 1e3, "unit": "ms", "time / torch.bmm": 1.0})
        # 4. The Triton kernel against cuBLAS.
        for size in ((1024, 2048) if args.quick else (1024, 4096)):
            r = triton_vs_torch(size, "fp16", budget_s=budget / 2)
            table.rows.append({"section": "triton", "case": f"matmul_triton {size}^3 fp16 (autotuned {r['config']})",
                               "value": r["triton TFLOP/s"], "unit": "TFLOP/s", "cuBLAS": r["cuBLAS TFLOP/s"],
                               "triton / cuBLAS": r["ratio"], "max rel err": r["max rel err"]})
        sweep_n = 2048 if args.quick else 4096
        sweep = triton_block_sweep(sweep_n, budget_s=budget / 8)
        for r in sweep:
            table.rows.append({"section": "triton tiles", "case": f"tile {r['tile']} w{r['warps']} s{r['stages']}, "
                               f"{sweep_n}^3 fp16", "value": r["TFLOP/s"], "unit": "TFLOP/s",
                               "cuBLAS": r["cuBLAS TFLOP/s"], "triton / cuBLAS": r["ratio"]})
        table.figures["gemm_triton_tiles"] = _sweep_figure(sweep)
        spec = hardware.detect()
        table.notes.append(f"GPU: {spec.name if spec else 'unknown'}; CUDA events with L2 flushed before each run, "
                           "median; acceptance: triton / cuBLAS >= 0.95 at 4096^3 and >= 0.80 at 1024^3.")
    else:
        table.notes.append("No GPU: the Triton-vs-cuBLAS rows and the TFLOP/s-vs-tile table run only on a GPU "
                           "(the interpreter checks the kernel's results on a CPU, not its speed).")
    return table


def _traffic_figure(rows: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    blocks = [r["block"] for r in rows]
    ax.plot(blocks, [r["model words"] for r in rows], "k-", label="model (2N+2) n^2")
    ax.plot(blocks, [r["simulated words"] for r in rows], "o", label="LRU simulation (cache sized per block)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("block b")
    ax.set_ylabel("words moved")
    ax.set_title(f"blocked GEMM traffic, n = {rows[0]['n']}, lines of {rows[0]['line words']} words")
    ax.legend()
    fig.tight_layout()
    plt.close(fig)
    return fig


def _sweep_figure(rows: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['tile']}\nw{r['warps']} s{r['stages']}" for r in rows]
    ax.bar(labels, [r["TFLOP/s"] for r in rows], color="tab:blue", label="matmul_kernel")
    ax.axhline(rows[0]["cuBLAS TFLOP/s"], color="tab:green", ls="--", label="torch.matmul (cuBLAS)")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"FP16 {rows[0]['n']}^3: Triton tile size vs cuBLAS")
    ax.legend()
    fig.tight_layout()
    plt.close(fig)
    return fig


BENCHMARKS = {"gemm": _bench_gemm}
