# mutant: starts the loop over k at 1 and misses the first outer product
# cell: gemm_batched
# replace: for p in range(k):
# with: for p in range(1, k):
