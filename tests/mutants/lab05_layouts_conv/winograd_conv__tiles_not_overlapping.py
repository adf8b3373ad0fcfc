# mutant: takes input tiles 4 apart (no overlap) instead of 2 apart
# cell: winograd_conv
def winograd_conv(x, w):
    bt, gm, at = BT.to(x), G.to(x), AT.to(x)
    n, c, h, width = x.shape
    k = w.shape[0]
    p, q = h - 2, width - 2
    tp, tq = (p + 1) // 2, (q + 1) // 2
    xp = x.new_zeros(n, c, 4 * tp + 4, 4 * tq + 4)
    xp[:, :, :h, :width] = x
    u = gm @ w @ gm.T
    y = x.new_empty(n, k, 2 * tp, 2 * tq)
    for i in range(tp):
        for j in range(tq):
            d = xp[:, :, 4 * i: 4 * i + 4, 4 * j: 4 * j + 4]
            v = bt @ d @ bt.T
            m = torch.einsum("kcab,ncab->nkab", u, v)
            y[:, :, 2 * i: 2 * i + 2, 2 * j: 2 * j + 2] = at @ m @ at.T
    return y[:, :, :p, :q]
