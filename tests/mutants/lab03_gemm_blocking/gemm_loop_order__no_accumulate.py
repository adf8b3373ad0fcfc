# mutant: assigns the product instead of accumulating it (C[i, j] = ... instead of +=)
# cell: gemm_loop_order
def gemm_loop_order(A, B, order):
    """C = A @ B by three loops nested in `order` (outermost first), one element at a time."""
    m, k = A.shape
    n = B.shape[1]
    C = np.zeros((m, n))
    extent = {"i": m, "j": n, "k": k}
    outer, middle, inner = order
    for x in range(extent[outer]):
        for y in range(extent[middle]):
            for z in range(extent[inner]):
                index = {outer: x, middle: y, inner: z}
                i, j, p = index["i"], index["j"], index["k"]
                C[i, j] = A[i, p] * B[p, j]
    return C
