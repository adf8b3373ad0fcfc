# mutant: warps per block as T // 32: a partial warp is not counted
# cell: occupancy
# replace: warps = -(-threads_per_block // L.warp_size)
# with: warps = max(1, threads_per_block // L.warp_size)
