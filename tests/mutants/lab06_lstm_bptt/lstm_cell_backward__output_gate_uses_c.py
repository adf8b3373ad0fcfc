# mutant: the output gate's gradient with c_t instead of tanh(c_t)
# cell: lstm_cell_backward
def lstm_cell_backward(dh, dc, cache):
    a, i, f, o, c = cache["a"], cache["i"], cache["f"], cache["o"], cache["c"]
    tanh_c = np.tanh(c)
    d_state = dh * o * (1 - tanh_c ** 2) + dc
    da = d_state * i * (1 - a ** 2)
    di = d_state * a * i * (1 - i)
    df = d_state * cache["c_prev"] * f * (1 - f)
    do = dh * c * o * (1 - o)
    dz = np.concatenate([da, di, df, do], axis=1)
    return dz @ cache["W"], dz @ cache["U"], d_state * f, dz.T @ cache["x"], dz.T @ cache["h_prev"], dz.sum(axis=0)
