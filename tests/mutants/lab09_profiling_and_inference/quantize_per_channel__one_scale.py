# mutant: repeats the per-tensor scale for every channel
# cell: quantize_per_channel
# replace: scales = np.abs(w).max(axis=others) / 127
# with: scales = np.full(w.shape[axis], np.abs(w).max() / 127)
