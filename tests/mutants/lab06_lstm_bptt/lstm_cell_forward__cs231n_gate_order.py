# mutant: reads the blocks of z in the cs231n slide's order (i, f, o, g) instead of the lecture's (a, i, f, o)
# cell: lstm_cell_forward
def lstm_cell_forward(x_t, h_prev, c_prev, W, U, b):
    H = h_prev.shape[1]
    z = x_t @ W.T + h_prev @ U.T + b
    i = sigmoid(z[:, :H])
    f = sigmoid(z[:, H:2 * H])
    o = sigmoid(z[:, 2 * H:3 * H])
    a = np.tanh(z[:, 3 * H:])
    c = a * i + f * c_prev
    h = o * np.tanh(c)
    cache = {"x": x_t, "h_prev": h_prev, "c_prev": c_prev, "a": a, "i": i, "f": f, "o": o, "c": c, "W": W, "U": U}
    return h, c, cache
