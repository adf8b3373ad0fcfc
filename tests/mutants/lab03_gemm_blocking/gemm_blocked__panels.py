# mutant: blocks C but multiplies whole panels (a block row of A by a block column of B), never blocking k
# cell: gemm_blocked
def gemm_blocked(A, B, block):
    """C = A @ B as products of tiles of at most block x block (edge tiles smaller)."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n), dtype=np.result_type(A.dtype, B.dtype))
    for i in range(0, m, block):
        for j in range(0, n, block):
            C[i:i + block, j:j + block] = A[i:i + block, :] @ B[:, j:j + block]
    return C
