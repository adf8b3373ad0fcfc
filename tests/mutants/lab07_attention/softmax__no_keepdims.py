# mutant: sums without keepdims, so the division broadcasts the row sums along the wrong axis
# cell: softmax
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed without overflow."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)
