# mutant: outputs o * c, forgetting the tanh of the cell state
# cell: lstm_cell_forward
def lstm_cell_forward(x_t, h_prev, c_prev, W, U, b):
    H = h_prev.shape[1]
    z = x_t @ W.T + h_prev @ U.T + b
    a = np.tanh(z[:, :H])
    i = sigmoid(z[:, H:2 * H])
    f = sigmoid(z[:, 2 * H:3 * H])
    o = sigmoid(z[:, 3 * H:])
    c = a * i + f * c_prev
    h = o * c
    cache = {"x": x_t, "h_prev": h_prev, "c_prev": c_prev, "a": a, "i": i, "f": f, "o": o, "c": c, "W": W, "U": U}
    return h, c, cache
