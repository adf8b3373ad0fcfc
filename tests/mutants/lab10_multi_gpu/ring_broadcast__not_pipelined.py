# mutant: forwards the whole message at once (receive all of it, then send all of it): right result, no pipelining
# cell: ring_broadcast
def ring_broadcast(tensor, src, chunks):
    """Broadcast `tensor` from rank `src` round the ring in `chunks` pieces, in place; bytes sent."""
    rank, k = dist.get_rank(), dist.get_world_size()
    left, right = (rank - 1) % k, (rank + 1) % k
    p = (rank - src) % k
    if p > 0:
        dist.recv(tensor, left)
    if p < k - 1:
        dist.send(tensor, right)
        return tensor.numel() * tensor.element_size()
    return 0
