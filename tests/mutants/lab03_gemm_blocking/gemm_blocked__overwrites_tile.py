# mutant: assigns each tile product to C instead of accumulating over k
# cell: gemm_blocked
def gemm_blocked(A, B, block):
    """C = A @ B as products of tiles of at most block x block (edge tiles smaller)."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), dtype=np.result_type(A.dtype, B.dtype))
    for i in range(0, m, block):
        for j in range(0, n, block):
            for p in range(0, k, block):
                C[i:i + block, j:j + block] = A[i:i + block, p:p + block] @ B[p:p + block, j:j + block]
    return C
