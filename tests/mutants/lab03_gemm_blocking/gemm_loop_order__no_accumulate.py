# mutant: assigns the product instead of accumulating it (C[i, j] = ... instead of +=)
# cell: gemm_loop_order
# replace: C[i, j] += A[i, p] * B[p, j]
# with: C[i, j] = A[i, p] * B[p, j]
