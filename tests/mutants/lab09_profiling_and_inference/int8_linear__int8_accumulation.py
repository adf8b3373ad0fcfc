# mutant: multiplies the int8 arrays as they are, so the sums wrap around in int8
# cell: int8_linear
# replace: acc = q_x.astype(np.int32) @ q_w.astype(np.int32).T       # (M, N) exact integer sums
# with: acc = q_x @ q_w.T
