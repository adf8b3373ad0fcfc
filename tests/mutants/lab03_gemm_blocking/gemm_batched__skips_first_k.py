# mutant: starts the loop over k at 1 and misses the first outer product
# cell: gemm_batched
def gemm_batched(A, B):
    """C[b] = A[b] @ B[b] for every b, vectorised over the batch."""
    batch, m, k = A.shape
    n = B.shape[2]
    C = np.zeros((batch, m, n), dtype=np.result_type(A.dtype, B.dtype))
    for p in range(1, k):
        C += A[:, :, p, None] * B[:, None, p, :]
    return C
