# mutant: blockIdx * threadIdx instead of blockIdx * blockDim + threadIdx
# cell: global_index
# replace: return tuple(b * d + t for b, d, t in zip(block_idx, block_dim, thread_idx))
# with: return tuple(b * t for b, d, t in zip(block_idx, block_dim, thread_idx))
