# mutant: copies the received partial sum over its own chunk instead of adding to it
# cell: ring_reduce_scatter
# fails: test_ring_reduce_scatter, test_ring_all_reduce
# replace: into += buf
# with: into.copy_(buf)
