# mutant: normalises along axis 0 whatever `axis` says
# cell: softmax
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed without overflow."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)
