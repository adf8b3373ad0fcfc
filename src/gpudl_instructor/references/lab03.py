"""The answers of lab03_gemm_blocking (GEMM blocking), in the lab's reading order.

1. the loop orders: ``gemm_reference`` (the definition, ``ijk``), ``gemm_loops`` (the triple
   loop nested in each of the six orders of ``gpudl.gemm.LOOP_ORDERS``)
2. which order moves the least data: a question, answered in the hidden check
   (``gpudl_instructor.checks.lab03``)
3. ``gemm_blocked``: block matrix access, products of tiles, edge tiles included
4. ``blocked_traffic``: the words blocked GEMM moves, ``(2N + 2) n^2``; ``computational_intensity``,
   ``q = f / m``, which holds the same formula
5. ``optimal_block``: the largest block whose three tiles fit, ``floor(sqrt(M / 3))``
6. ``matmul_kernel``, ``triton_matmul``: the tiled Triton kernel (Triton tutorial 03: tiles,
   masks, strides, grouped launch order, FP32 accumulation) with the exercise's signature, and
   its launcher
7. ``gemm_batched_outer``: the batched product written out, vectorised over the batch

The course edition keeps what these answers are measured against and built on: the LRU
simulator and ``naive_traffic`` (``gpudl.gemm.traffic``), the library's batched calls, and the
tuned ``gpudl.gemm.matmul_triton`` (persistent kernels with another contract).
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np
import triton
import triton.language as tl

from gpudl.gemm.batched import _check_batched
from gpudl.gemm.loops import LOOP_ORDERS, _check_operands, _result_dtype
from gpudl.gemm.traffic import _positive, naive_traffic
from gpudl.references import reference

# --- 1. the definition and its loop orders ---------------------------------------------------


@reference
def gemm_reference(A: Any, B: Any) -> np.ndarray:
    """``C[i, j] = sum_k A[i, k] B[k, j]``, three Python loops (the lecture's "independent dot
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
    element each loop walks along, so in the memory traffic (see ``gpudl.gemm.loop_trace``)."""
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


# --- 3. blocked GEMM --------------------------------------------------------------------------

def _tile_sizes(block: int | Sequence[int]) -> tuple[int, int, int]:
    bm, bn, bk = (block,) * 3 if isinstance(block, (int, np.integer)) else tuple(block)
    if min(bm, bn, bk) < 1:
        raise ValueError(f"block sizes must be positive, got {block!r}")
    return int(bm), int(bn), int(bk)


@reference
def gemm_blocked(A: Any, B: Any, block: int | Sequence[int] = 256) -> np.ndarray:
    """Block matrix access (the lecture): ``C_ij += A_ik B_kj`` over tiles of ``block`` (an int,
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


# --- 4. and 5. the traffic model ----------------------------------------------------------------

@reference
def blocked_traffic(n: int, block: int) -> int:
    """Words moved by blocked GEMM on ``n x n`` matrices with ``block x block`` tiles (the lecture).

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
    return 2 * n ** 3 / words                          # 2 n^3 FLOPs: a multiply-add is two


@reference
def optimal_block(fast_memory_words: int) -> int:
    """The largest block ``b`` whose three tiles (of A, B and C) fit in fast memory:
    ``3 b^2 <= M``, so ``b = floor(sqrt(M / 3))`` (the lecture)."""
    words = _positive("fast_memory_words", fast_memory_words)
    if words < 3:
        raise ValueError(f"three tiles of even 1 word need 3 words of fast memory, got {words}")
    return math.isqrt(words // 3)


# --- 6. the tiled Triton kernel -------------------------------------------------------------------

@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
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
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn     # (BLOCK_M, BLOCK_N)
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@reference
def triton_matmul(a: Any, b: Any, c: Any, block_m: int = 32, block_n: int = 32, block_k: int = 32,
                  group_m: int = 4) -> Any:
    """Fill ``c`` (M, N) with ``a`` (M, K) @ ``b`` (K, N) with ``matmul_kernel``, one program per
    tile of C in a 1-D grid (any strides); return ``c``. Tiles of at least 16 (``tl.dot``)."""
    M, K = a.shape
    N = b.shape[1]
    if M == 0 or N == 0:
        return c
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    matmul_kernel[grid](a, b, c, M, N, K,
                        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                        BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=group_m)
    return c


# --- 7. batched GEMM ---------------------------------------------------------------------------------

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
