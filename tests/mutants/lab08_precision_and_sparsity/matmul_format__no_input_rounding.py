# mutant: multiplies the FP32 inputs as they are, without rounding them to the input format
# cell: matmul_format
# replace: a = formats.round_to(np.asarray(a, dtype=np.float32), inputs)
# with: a = np.asarray(a, dtype=np.float64)
# replace: b = formats.round_to(np.asarray(b, dtype=np.float32), inputs)
# with: b = np.asarray(b, dtype=np.float64)
