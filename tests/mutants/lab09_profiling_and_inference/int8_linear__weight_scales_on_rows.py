# mutant: applies the per-output-channel scales along the rows of the result
# cell: int8_linear
# replace: y = acc * s_x * np.asarray(s_w)[None, :]
# with: y = acc * s_x * np.asarray(s_w)[:, None]
