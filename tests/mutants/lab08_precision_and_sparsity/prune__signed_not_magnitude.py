# mutant: keeps the 2 largest values rather than the 2 largest magnitudes
# cell: prune
# replace: order = np.argsort(-np.abs(groups), axis=-1, kind="stable")
# with: order = np.argsort(-groups, axis=-1, kind="stable")
