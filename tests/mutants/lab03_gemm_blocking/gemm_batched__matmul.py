# mutant: lets np.matmul do the batched product instead of writing it
# cell: gemm_batched
def gemm_batched(A, B):
    """C[b] = A[b] @ B[b] for every b, vectorised over the batch."""
    return A @ B
