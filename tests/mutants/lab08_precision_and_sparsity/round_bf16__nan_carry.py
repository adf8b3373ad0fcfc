# mutant: rounds NaNs like numbers: an all-ones mantissa carries into the sign bit (0x7FFFFFFF -> -0)
# cell: round_bf16
# replace: return np.where(np.isnan(x), (u >> 16) | 0x0040, rounded).astype(np.uint16)
# with: return (rounded & 0xFFFF).astype(np.uint16)
