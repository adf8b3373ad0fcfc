# mutant: treats the all-ones exponent as an ordinary binade (no infinity, no NaN)
# cell: decode_bits
# replace: value = np.where(exponent == 2**e - 1, np.where(fraction == 0, np.inf, np.nan), value)
# with: pass
