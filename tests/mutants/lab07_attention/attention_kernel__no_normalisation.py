# mutant: stores the accumulator without dividing by l
# cell: attention_kernel
# fails: test_attention_kernel, test_kernel_speed
# replace: out = acc / l[:, None]
# with: out = acc
