# mutant: stores the column of each value in the matrix instead of its position in its group
# cell: compress
# replace: return values.reshape(m, k // 2), positions.reshape(m, k // 2)
# with: return values.reshape(m, k // 2), (positions + 4 * np.arange(k // 4)[None, :, None]).reshape(m, k // 2)
