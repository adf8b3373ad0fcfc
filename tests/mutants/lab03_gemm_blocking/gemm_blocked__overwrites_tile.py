# mutant: assigns each tile product to C instead of accumulating over k
# cell: gemm_blocked
# replace: C[i:i + block, j:j + block] += A[i:i + block, p:p + block] @ B[p:p + block, j:j + block]
# with: C[i:i + block, j:j + block] = A[i:i + block, p:p + block] @ B[p:p + block, j:j + block]
