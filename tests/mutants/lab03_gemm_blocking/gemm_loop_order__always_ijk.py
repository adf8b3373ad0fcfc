# mutant: ignores `order` and always nests the loops i, j, k
# cell: gemm_loop_order
def gemm_loop_order(A, B, order):
    """C = A @ B by three loops nested in `order` (outermost first), one element at a time."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            for p in range(k):
                C[i, j] += A[i, p] * B[p, j]
    return C
