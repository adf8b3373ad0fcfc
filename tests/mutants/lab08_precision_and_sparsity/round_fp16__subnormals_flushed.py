# mutant: flushes results below the smallest normal to zero
# cell: round_fp16
# replace: _, n = np.frexp(r)
# with: r = np.where(r < 2.0**-14, 0.0, r); _, n = np.frexp(r)
