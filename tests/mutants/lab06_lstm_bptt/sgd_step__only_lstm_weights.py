# mutant: updates W, U and b only (hard-coded keys)
# cell: sgd_step
def sgd_step(params, grads, lr):
    return {k: params[k] - lr * grads[k] for k in ("W", "U", "b")}
