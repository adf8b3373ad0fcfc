# mutant: loads the K tiles without a mask, reading past the K edge of A and B
# cell: triton_matmul
# replace: a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
# with: a = tl.load(a_ptrs)
# replace: b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
# with: b = tl.load(b_ptrs)
