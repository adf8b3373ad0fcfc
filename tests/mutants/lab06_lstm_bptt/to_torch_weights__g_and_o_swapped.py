# mutant: (i, f, o, g) only for the weights, right order for the bias
# cell: to_torch_weights
def to_torch_weights(W, U, b):
    H = U.shape[1]
    a, i, f, o = (slice(k * H, (k + 1) * H) for k in range(4))

    def reorder(m):
        return np.concatenate([m[i], m[f], m[a], m[o]])

    def wrong(m):
        return np.concatenate([m[i], m[f], m[o], m[a]])

    return wrong(W), wrong(U), reorder(b), np.zeros_like(b)
