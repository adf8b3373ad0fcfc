# mutant: gives subnormals the exponent -bias instead of 1 - bias
# cell: decode_bits
# replace: fraction * 2.0 ** (1 - bias)
# with: fraction * 2.0 ** (-bias)
