# mutant: multiplies the FP32 probabilities by FP16 values without converting p to v's dtype (the FP16 run fails; FP32 hides it)
# cell: attention_kernel
# fails: test_kernel_speed
# replace: tl.dot(p.to(v.dtype), v)
# with: tl.dot(p, v)
