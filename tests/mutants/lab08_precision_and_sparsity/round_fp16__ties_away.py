# mutant: rounds ties away from zero (floor(q + 0.5)) instead of to even
# cell: round_fp16
# replace: r = np.rint(a / spacing) * spacing
# with: r = np.floor(a / spacing + 0.5) * spacing
