# mutant: loads padding keys as zeros but leaves them visible with score 0
# cell: attention_kernel
# fails: test_attention_kernel, test_kernel_speed
# replace: visible = cols[None, :] < N_K
# with: visible = cols[None, :] >= 0
