# mutant: walks the steps forwards in time, t = 0..T-1
# cell: lstm_backward
def lstm_backward(dout, caches, dh_last=None, dc_last=None):
    T = len(caches)
    dh_next = np.zeros_like(caches[0]["h_prev"]) if dh_last is None else dh_last
    dc_next = np.zeros_like(caches[0]["c_prev"]) if dc_last is None else dc_last
    dW = np.zeros_like(caches[0]["W"])
    dU = np.zeros_like(caches[0]["U"])
    db = np.zeros(caches[0]["W"].shape[0])
    dxs = [None] * T
    for t in range(T):
        dxs[t], dh_next, dc_next, dW_t, dU_t, db_t = lstm_cell_backward(dout[t] + dh_next, dc_next, caches[t])
        dW += dW_t
        dU += dU_t
        db += db_t
    return np.stack(dxs), dh_next, dc_next, dW, dU, db
