"""GEMM as loops: the definition, its six loop orders, accumulated outer products, blocks.

``C = A @ B`` with ``A`` (M, K) and ``B`` (K, N): every entry ``C[i, j]`` is the dot product of
row i of A and column j of B. The same ``M N K`` multiply-adds can be arranged in many ways,
which differ only in the order memory is walked:

``gemm_reference``              the definition: three loops, a dot product per entry (small matrices)
``LOOP_ORDERS``, ``gemm_loops`` the same triple loop in each of its six orders
``gemm_outer``                  accumulated outer products: one column of A and one row of B at a
                                time, each element of A and B read once (the lecture)
``gemm_blocked``                block matrix access: products of tiles, edge tiles included (the lecture)
"""
from __future__ import annotations

import itertools
from typing import Any, Sequence

import numpy as np

from ..references import reference

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
    """``C = sum_k outer(A[:, k], B[k, :])``: accumulated outer products (the lecture).

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
