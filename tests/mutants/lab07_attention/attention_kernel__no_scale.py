# mutant: forgets to multiply the scores by scale
# cell: attention_kernel
# fails: test_attention_kernel, test_kernel_speed
# replace: s = tl.dot(q, tl.trans(k)) * scale                                # (BLOCK_M, BLOCK_N)
# with: s = tl.dot(q, tl.trans(k))                                        # (BLOCK_M, BLOCK_N)
