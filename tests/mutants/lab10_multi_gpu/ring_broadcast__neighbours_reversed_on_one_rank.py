# mutant: rank 1 swaps its neighbours (sends left, receives right): the ring breaks and a rank waits forever
# cell: ring_broadcast
# replace: left, right = (rank - 1) % k, (rank + 1) % k
# with: left, right = ((rank + 1) % k, (rank - 1) % k) if rank == 1 else ((rank - 1) % k, (rank + 1) % k)
