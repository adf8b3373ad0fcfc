# mutant: the cell-state gradient is not carried back in time (each step starts from dc = 0)
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
        dc_in = dc_next if t == T - 1 else np.zeros_like(dc_next)
        dxs[t], dh_next, dc_prev, dW_t, dU_t, db_t = lstm_cell_backward(dout[t] + dh_next, dc_in, caches[t])
        dW += dW_t
        dU += dU_t
        db += db_t
    return np.stack(dxs), dh_next, dc_prev, dW, dU, db
