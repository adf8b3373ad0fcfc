# mutant: BPTT truncated to one step: each step sees only its own loss (dh and dc not carried back)
# cell: lstm_backward
def lstm_backward(dout, caches, dh_last=None, dc_last=None):
    T = len(caches)
    dh_next = np.zeros_like(caches[0]["h_prev"]) if dh_last is None else dh_last
    dc_next = np.zeros_like(caches[0]["c_prev"]) if dc_last is None else dc_last
    dW = np.zeros_like(caches[0]["W"])
    dU = np.zeros_like(caches[0]["U"])
    db = np.zeros(caches[0]["W"].shape[0])
    dxs = [None] * T
    for t in reversed(range(T)):
        dh_in = dout[t] + (dh_next if t == T - 1 else 0)
        dc_in = dc_next if t == T - 1 else np.zeros_like(dc_next)
        dxs[t], dh_prev, dc_prev, dW_t, dU_t, db_t = lstm_cell_backward(dh_in, dc_in, caches[t])
        dW += dW_t
        dU += dU_t
        db += db_t
    return np.stack(dxs), dh_prev, dc_prev, dW, dU, db
