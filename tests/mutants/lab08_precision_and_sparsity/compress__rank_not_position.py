# mutant: stores which of the two kept values it is (0 or 1) instead of its position in the group
# cell: compress
# replace: return values.reshape(m, k // 2), positions.reshape(m, k // 2)
# with: return values.reshape(m, k // 2), np.tile([0, 1], (m, k // 4))
