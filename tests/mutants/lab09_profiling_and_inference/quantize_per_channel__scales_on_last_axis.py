# mutant: divides by the scales without shaping them along the channel axis
# cell: quantize_per_channel
# replace: q = np.clip(np.rint(w / scales.reshape(shape)), -127, 127).astype(np.int8)
# with: q = np.clip(np.rint(w / scales), -127, 127).astype(np.int8)
