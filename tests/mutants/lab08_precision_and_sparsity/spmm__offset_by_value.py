# mutant: offsets the index by the position of the value (2 t) instead of its group (4 (t // 2))
# cell: spmm
# replace: rows = 4 * (np.arange(half) // 2)[None, :] + indices
# with: rows = np.minimum(2 * np.arange(half)[None, :] + indices, b.shape[0] - 1)
