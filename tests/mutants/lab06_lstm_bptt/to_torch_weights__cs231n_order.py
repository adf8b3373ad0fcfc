# mutant: gate order mapped wrongly to torch: (i, f, o, g) as on the cs231n slide
# cell: to_torch_weights
def to_torch_weights(W, U, b):
    H = U.shape[1]
    a, i, f, o = (slice(k * H, (k + 1) * H) for k in range(4))

    def reorder(m):
        return np.concatenate([m[i], m[f], m[o], m[a]])

    return reorder(W), reorder(U), reorder(b), np.zeros_like(b)
