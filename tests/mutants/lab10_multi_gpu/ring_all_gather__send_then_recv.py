# mutant: every rank sends first and receives second (blocking dist.send, then dist.recv): on NCCL a deadlock
# cell: ring_all_gather
# fails: test_ring_all_gather, test_ring_all_reduce
def ring_all_gather(tensor):
    rank, k = dist.get_rank(), dist.get_world_size()
    left, right = (rank - 1) % k, (rank + 1) % k
    chunks = torch.tensor_split(tensor.view(-1), k)
    sent = 0
    for s in range(k - 1):
        out, into = chunks[(rank - s) % k], chunks[(rank - s - 1) % k]
        if out.numel():
            dist.send(out.contiguous(), right)
            sent += out.numel() * out.element_size()
        if into.numel():
            buf = torch.empty_like(into)
            dist.recv(buf, left)
            into.copy_(buf)
    return sent
