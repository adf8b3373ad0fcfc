# mutant: rank 1 swaps its neighbours (sends left, receives right): a deadlock on 3 or more ranks
# cell: ring_reduce_scatter
# fails: test_ring_reduce_scatter, test_ring_all_reduce
# replace: left, right = (rank - 1) % k, (rank + 1) % k
# with: left, right = ((rank + 1) % k, (rank - 1) % k) if rank == 1 else ((rank - 1) % k, (rank + 1) % k)
