# mutant: re-biases the exponent with 16 instead of 15
# cell: round_fp16
# replace: exponent = np.where(normal, n - 1 + 15, 0)
# with: exponent = np.where(normal, n - 1 + 16, 0)
