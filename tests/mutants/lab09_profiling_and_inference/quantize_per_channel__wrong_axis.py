# mutant: takes the max along the channel axis instead of over the other axes
# cell: quantize_per_channel
def quantize_per_channel(w, axis=0):
    w = np.asarray(w, dtype=float)
    scales = np.abs(w).max(axis=axis) / 127
    q = np.clip(np.rint(w / scales), -127, 127).astype(np.int8)
    return q, scales
