# mutant: scale = amax / 128
# cell: quantize_per_tensor
# replace: scale = amax / 127
# with: scale = amax / 128
