# mutant: the tile of A is loaded without a bounds check along k
# cell: matmul
# replace: sA[ty, tx] = A[row, t0 + tx] if row < m and t0 + tx < k else 0.0
# with: sA[ty, tx] = A[row, t0 + tx] if row < m else 0.0
