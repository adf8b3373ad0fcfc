# mutant: updates the arrays of params in place (`params[k] -= lr * grads[k]`) and returns params itself
# cell: sgd_step
def sgd_step(params, grads, lr):
    for k in params:
        params[k] -= lr * grads[k]
    return params
