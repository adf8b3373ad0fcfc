# mutant: reduces along the ring to the last rank and broadcasts the sum back: right sums, about 2N bytes per rank
# cell: ring_all_reduce
def ring_all_reduce(tensor):
    """The sum over ranks on every rank, in place: reduce-scatter, then all-gather; bytes sent."""
    rank, k = dist.get_rank(), dist.get_world_size()
    left, right = (rank - 1) % k, (rank + 1) % k
    sent = 0
    if rank > 0:                       # a chain 0 -> 1 -> ... -> k-1, each adding its own tensor
        buf = torch.empty_like(tensor)
        dist.recv(buf, left)
        tensor += buf
    if rank < k - 1:
        dist.send(tensor, right)
        sent += tensor.numel() * tensor.element_size()
    return sent + ring_broadcast(tensor, k - 1, 1)
