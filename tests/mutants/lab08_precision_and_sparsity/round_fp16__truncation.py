# mutant: truncates to the grid instead of rounding to nearest
# cell: round_fp16
# replace: r = np.rint(a / spacing) * spacing
# with: r = np.floor(a / spacing) * spacing
