# mutant: n // M blocks: the tail of n % M elements gets no block
# cell: launch_shape
# replace: blocks = (n + threads_per_block - 1) // threads_per_block
# with: blocks = n // threads_per_block
