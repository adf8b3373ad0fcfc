# mutant: stores the whole tile without a mask, writing past the edges of C
# cell: triton_matmul
# replace: tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
# with: tl.store(c_ptrs, c)
