# mutant: prunes groups of 4 along M (down the columns) instead of along the reduction dimension K
# cell: prune
def prune_2_4(w):
    w = np.asarray(w).T                       # groups along the other axis
    m, k = w.shape
    groups = w.reshape(m, k // 4, 4) if k % 4 == 0 else w.reshape(m, -1, k)
    order = np.argsort(-np.abs(groups), axis=-1, kind="stable")
    keep = np.zeros(groups.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :2], True, axis=-1)
    return np.where(keep, groups, 0.0).reshape(m, k).T
