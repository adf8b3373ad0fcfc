"""GEMM as loops: the loop orders, and accumulated outer products.

``C = A @ B`` with ``A`` (M, K) and ``B`` (K, N): every entry ``C[i, j]`` is the dot product of
row i of A and column j of B, ``C[i, j] += A[i, k] * B[k, j]`` in three nested loops. The same
``M N K`` multiply-adds can be nested in six orders, which differ only in the order memory is
walked (``gpudl.gemm.loop_trace`` lists the accesses of each; lab 03 has you write the loops,
and the blocked GEMM):

``LOOP_ORDERS``                 the six nestings of the triple loop, outermost loop first
``gemm_outer``                  accumulated outer products: one column of A and one row of B at a
                                time, each element of A and B read once (the lecture)
"""
from __future__ import annotations

from typing import Any

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


@reference
def gemm_outer(A: Any, B: Any) -> np.ndarray:
    """``C = sum_k outer(A[:, k], B[k, :])``: accumulated outer products (the lecture).

    Each step reads one column of A and one row of B, once, and updates all of C: the
    accumulator is what must stay in fast memory (registers, in a GPU thread's tile). Marked
    as a reference so that lab 03's GEMM exercises cannot call it."""
    A, B = _check_operands(A, B)
    C = np.zeros((A.shape[0], B.shape[1]), dtype=_result_dtype(A, B))   # (M, N)
    for p in range(A.shape[1]):
        C += np.multiply.outer(A[:, p], B[p, :])
    return C
