# mutant: exponentiates the raw scores, so exp(1000) overflows to inf
# cell: softmax
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed without overflow."""
    e = np.exp(np.asarray(x, dtype=float))
    return e / np.sum(e, axis=axis, keepdims=True)
