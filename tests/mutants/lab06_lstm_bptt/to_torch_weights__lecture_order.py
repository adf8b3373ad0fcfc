# mutant: keeps the lecture's order (a, i, f, o)
# cell: to_torch_weights
def to_torch_weights(W, U, b):
    return W, U, b, np.zeros_like(b)
