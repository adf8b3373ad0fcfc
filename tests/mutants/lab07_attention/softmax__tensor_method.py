# mutant: calls torch's softmax as a tensor method (x.softmax), which the exercise forbids under every name torch gives it
# cell: softmax
def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, computed without overflow."""
    import torch
    return torch.from_numpy(np.asarray(x, dtype=float)).softmax(axis).numpy()
