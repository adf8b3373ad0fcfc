# mutant: saturates overflow to 65504 instead of infinity
# cell: round_fp16
# replace: fields = np.where(r > 65504, 0x7C00, fields)
# with: fields = np.where(r > 65504, np.where(np.isinf(a), 0x7C00, 0x7BFF), fields)
