# mutant: returns a new dict, but of the caller's arrays updated in place (`p -= lr * g`)
# cell: sgd_step
def sgd_step(params, grads, lr):
    new = {}
    for k, p in params.items():
        p -= lr * grads[k]
        new[k] = p
    return new
