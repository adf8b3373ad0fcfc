# mutant: keeps the 2 smallest magnitudes
# cell: prune
# replace: order = np.argsort(-np.abs(groups), axis=-1, kind="stable")
# with: order = np.argsort(np.abs(groups), axis=-1, kind="stable")
