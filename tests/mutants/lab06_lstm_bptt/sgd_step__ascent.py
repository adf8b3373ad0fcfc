# mutant: follows the slide's "w+ = w + lr * grad(w)": gradient ascent
# cell: sgd_step
def sgd_step(params, grads, lr):
    return {k: p + lr * grads[k] for k, p in params.items()}
