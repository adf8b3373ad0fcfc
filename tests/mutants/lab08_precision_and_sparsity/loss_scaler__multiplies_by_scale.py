# mutant: unscales by multiplying by the scale
# cell: loss_scaler
# replace: np.asarray(g, dtype=np.float32) / np.float32(scale)
# with: np.asarray(g, dtype=np.float32) * np.float32(scale)
