# mutant: loops over whole tiles only, so the edge tiles of sizes that are not multiples of the block are dropped
# cell: gemm_blocked
def gemm_blocked(A, B, block):
    """C = A @ B as products of tiles of at most block x block (edge tiles smaller)."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), dtype=np.result_type(A.dtype, B.dtype))
    for i in range(0, m - block + 1, block):
        for j in range(0, n - block + 1, block):
            for p in range(0, k - block + 1, block):
                C[i:i + block, j:j + block] += A[i:i + block, p:p + block] @ B[p:p + block, j:j + block]
    return C
