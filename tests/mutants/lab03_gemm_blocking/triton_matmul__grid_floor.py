# mutant: launches M // BLOCK_M * (N // BLOCK_N) programs, so the edge tiles are never computed
# cell: triton_matmul
# replace: grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
# with: grid = ((M // block_m) * (N // block_n),)
