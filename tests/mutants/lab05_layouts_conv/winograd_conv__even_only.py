# mutant: assumes even output sizes (floor instead of ceil for the number of tiles)
# cell: winograd_conv
def winograd_conv(x, w):
    bt, gm, at = BT.to(x), G.to(x), AT.to(x)
    n, c, h, width = x.shape
    k = w.shape[0]
    p, q = h - 2, width - 2
    tp, tq = p // 2, q // 2
    u = gm @ w @ gm.T
    y = x.new_empty(n, k, 2 * tp, 2 * tq)
    for i in range(tp):
        for j in range(tq):
            d = x[:, :, 2 * i: 2 * i + 4, 2 * j: 2 * j + 4]
            v = bt @ d @ bt.T
            m = torch.einsum("kcab,ncab->nkab", u, v)
            y[:, :, 2 * i: 2 * i + 2, 2 * j: 2 * j + 2] = at @ m @ at.T
    return y
