# mutant: all-reduces every gradient tensor on its own instead of one flat buffer per bucket
# cell: data_parallel_step
def data_parallel_step(model, x, y, lr, buckets):
    """One SGD step on this rank's share, gradients averaged over ranks bucket by bucket."""
    k = dist.get_world_size()
    params = list(model.parameters())
    torch.nn.functional.mse_loss(model(x), y).backward()
    for bucket in buckets:
        for i in bucket:
            dist.all_reduce(params[i].grad)
            params[i].grad /= k
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None
