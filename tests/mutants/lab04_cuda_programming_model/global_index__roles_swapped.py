# mutant: threadIdx * blockDim + blockIdx: block and thread swapped
# cell: global_index
# replace: return tuple(b * d + t for b, d, t in zip(block_idx, block_dim, thread_idx))
# with: return tuple(t * d + b for b, d, t in zip(block_idx, block_dim, thread_idx))
