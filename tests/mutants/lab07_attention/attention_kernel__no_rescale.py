# mutant: adds each block's p @ v to the accumulator without rescaling it by alpha
# cell: attention_kernel
# fails: test_attention_kernel, test_kernel_speed
# replace: acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
# with: acc = acc + tl.dot(p.to(v.dtype), v)
