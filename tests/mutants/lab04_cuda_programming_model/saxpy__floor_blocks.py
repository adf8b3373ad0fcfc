# mutant: n // M blocks: the tail is dropped
# cell: saxpy
# replace: blocks = (n + threads_per_block - 1) // threads_per_block
# with: blocks = n // threads_per_block
