# mutant: starts every step from c0: the cell state is not carried through time
# cell: lstm_forward
def lstm_forward(x, h0, c0, W, U, b):
    h = h0
    outs, caches = [], []
    for t in range(x.shape[0]):
        h, c, cache = lstm_cell_forward(x[t], h, c0, W, U, b)
        outs.append(h)
        caches.append(cache)
    return np.stack(outs), (h, c), caches
