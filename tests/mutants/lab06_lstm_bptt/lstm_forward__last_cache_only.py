# mutant: keeps only the last step's cache (overwritten in the loop)
# cell: lstm_forward
def lstm_forward(x, h0, c0, W, U, b):
    h, c = h0, c0
    outs = []
    for t in range(x.shape[0]):
        h, c, cache = lstm_cell_forward(x[t], h, c, W, U, b)
        outs.append(h)
    return np.stack(outs), (h, c), [cache] * x.shape[0]
