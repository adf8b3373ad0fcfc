# mutant: forgets the learning rate
# cell: sgd_step
def sgd_step(params, grads, lr):
    return {k: p - grads[k] for k, p in params.items()}
