# mutant: an asymmetric range, -128..127
# cell: quantize_per_tensor
# replace: q = np.clip(np.rint(np.asarray(x) / scale), -127, 127).astype(np.int8)
# with: q = np.clip(np.rint(np.asarray(x) / scale), -128, 127).astype(np.int8)
