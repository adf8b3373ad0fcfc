"""Many small GEMMs (the lecture: MAGMA's batched routines): one call each, or one call for all.

``gemm_batched_loop``, ``gemm_batched``   a loop of GEMM calls, one batched call of the library
                                (lab 03 has you write the batched computation itself)
"""
from __future__ import annotations

from typing import Any

import numpy as np


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
