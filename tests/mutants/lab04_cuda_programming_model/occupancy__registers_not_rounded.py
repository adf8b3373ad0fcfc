# mutant: registers per warp not rounded up to the allocation unit
# cell: occupancy
# replace: regs_per_warp = -(-registers_per_thread * L.warp_size // unit) * unit
# with: regs_per_warp = registers_per_thread * L.warp_size
