# mutant: loops over the batch, one small product (accumulated outer products) per matrix
# cell: gemm_batched
def gemm_batched(A, B):
    """C[b] = A[b] @ B[b] for every b, vectorised over the batch."""
    batch, m, k = A.shape
    n = B.shape[2]
    C = np.zeros((batch, m, n), dtype=np.result_type(A.dtype, B.dtype))
    for b in range(batch):
        for p in range(k):
            C[b] += A[b, :, p, None] * B[b, None, p, :]
    return C
