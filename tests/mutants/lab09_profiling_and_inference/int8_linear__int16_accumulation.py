# mutant: accumulates in int16, which overflows past 32767
# cell: int8_linear
# replace: acc = q_x.astype(np.int32) @ q_w.astype(np.int32).T       # (M, N) exact integer sums
# with: acc = q_x.astype(np.int16) @ q_w.astype(np.int16).T
