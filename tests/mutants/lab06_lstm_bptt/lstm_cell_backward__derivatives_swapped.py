# mutant: sigmoid' and tanh' swapped: (1 - s^2) for the sigmoid gates, a(1 - a) for the tanh activation
# cell: lstm_cell_backward
def lstm_cell_backward(dh, dc, cache):
    a, i, f, o, c = cache["a"], cache["i"], cache["f"], cache["o"], cache["c"]
    tanh_c = np.tanh(c)
    d_state = dh * o * (1 - tanh_c ** 2) + dc
    da = d_state * i * a * (1 - a)
    di = d_state * a * (1 - i ** 2)
    df = d_state * cache["c_prev"] * (1 - f ** 2)
    do = dh * tanh_c * (1 - o ** 2)
    dz = np.concatenate([da, di, df, do], axis=1)
    return dz @ cache["W"], dz @ cache["U"], d_state * f, dz.T @ cache["x"], dz.T @ cache["h_prev"], dz.sum(axis=0)
