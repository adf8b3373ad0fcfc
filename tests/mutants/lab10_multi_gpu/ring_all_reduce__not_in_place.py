# mutant: reduces a copy of the tensor and leaves the rank's own tensor as it was (the result must be in place)
# cell: ring_all_reduce
# fails: test_ring_all_reduce
# replace: return ring_reduce_scatter(tensor) + ring_all_gather(tensor)
# with: work = tensor.clone(); return ring_reduce_scatter(work) + ring_all_gather(work)
