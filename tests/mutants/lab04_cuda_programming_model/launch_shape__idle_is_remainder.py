# mutant: idle threads taken as n % M instead of blocks x M - n
# cell: launch_shape
# replace: return blocks, blocks * threads_per_block - n
# with: return blocks, n % threads_per_block
