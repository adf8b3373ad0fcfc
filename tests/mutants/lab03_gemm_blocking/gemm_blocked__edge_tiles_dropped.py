# mutant: loops over whole tiles only, so the edge tiles of sizes that are not multiples of the block are dropped
# cell: gemm_blocked
# replace: for i in range(0, m, block):
# with: for i in range(0, m - block + 1, block):
# replace: for j in range(0, n, block):
# with: for j in range(0, n - block + 1, block):
# replace: for p in range(0, k, block):
# with: for p in range(0, k - block + 1, block):
