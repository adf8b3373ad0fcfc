# mutant: takes the bias as 2^(e-1) instead of 2^(e-1) - 1
# cell: decode_bits
# replace: bias = 2 ** (e - 1) - 1
# with: bias = 2 ** (e - 1)
