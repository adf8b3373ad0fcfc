# mutant: subtracts the maximum of the whole array, so rows far below it underflow to 0/0
# cell: softmax
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed without overflow."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)
