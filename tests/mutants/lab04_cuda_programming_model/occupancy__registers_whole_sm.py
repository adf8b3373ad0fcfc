# mutant: registers divided over the whole SM per block, without the per-warp sub-partitions
# cell: occupancy
# replace: "registers": per_partition * L.register_sub_partitions // warps,
# with: "registers": L.registers_per_sm // (registers_per_thread * threads_per_block),
