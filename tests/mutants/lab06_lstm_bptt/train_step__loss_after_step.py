# mutant: returns the loss after the step (a second forward with the new parameters) instead of before it
# cell: train_step
def train_step(params, x, y, lr):
    T, N, _ = x.shape
    H = params["U"].shape[1]
    h0 = c0 = np.zeros((N, H))
    out, _, caches = lstm_forward(x, h0, c0, params["W"], params["U"], params["b"])
    err = out @ params["Why"].T + params["by"] - y
    dy = err / N
    grads = {"Why": np.einsum("tnk,tnh->kh", dy, out), "by": dy.sum(axis=(0, 1))}
    _, _, _, grads["W"], grads["U"], grads["b"] = lstm_backward(dy @ params["Why"], caches)
    new = sgd_step(params, grads, lr)
    out, _, _ = lstm_forward(x, h0, c0, new["W"], new["U"], new["b"])
    loss = 0.5 * np.sum((out @ new["Why"].T + new["by"] - y) ** 2) / N
    return float(loss), new
