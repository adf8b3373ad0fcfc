# mutant: all-gathers before reduce-scattering: chunks travel before they are summed
# cell: ring_all_reduce
def ring_all_reduce(tensor):
    """The sum over ranks on every rank, in place: reduce-scatter, then all-gather; bytes sent."""
    return ring_all_gather(tensor) + ring_reduce_scatter(tensor)
