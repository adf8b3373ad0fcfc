# mutant: sums in float16 (overflows past 65504 and rounds)
# cell: int8_linear
# replace: acc = q_x.astype(np.int32) @ q_w.astype(np.int32).T       # (M, N) exact integer sums
# with: acc = q_x.astype(np.float16) @ q_w.astype(np.float16).T
