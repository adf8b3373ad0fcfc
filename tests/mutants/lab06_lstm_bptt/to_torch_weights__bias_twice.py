# mutant: puts b in both of torch's biases, which torch adds
# cell: to_torch_weights
def to_torch_weights(W, U, b):
    H = U.shape[1]
    a, i, f, o = (slice(k * H, (k + 1) * H) for k in range(4))

    def reorder(m):
        return np.concatenate([m[i], m[f], m[a], m[o]])

    return reorder(W), reorder(U), reorder(b), reorder(b)
