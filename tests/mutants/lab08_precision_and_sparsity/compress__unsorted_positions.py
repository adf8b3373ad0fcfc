# mutant: stores non-zeros before the filling zeros, not in the order they sit in the group
# cell: compress
# replace: positions = np.sort(positions, axis=-1)
# with: pass
