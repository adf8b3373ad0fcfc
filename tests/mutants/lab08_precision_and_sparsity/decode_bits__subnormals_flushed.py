# mutant: decodes every pattern with a zero exponent field as zero (no subnormals)
# cell: decode_bits
# replace: np.where(exponent == 0, fraction * 2.0 ** (1 - bias),
# with: np.where(exponent == 0, 0.0 * fraction,
