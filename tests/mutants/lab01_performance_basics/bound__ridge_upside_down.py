# mutant: computes the ridge point as bandwidth / peak
# cell: bound
def bound(flops, nbytes, peak_flops, peak_bandwidth):
    return "memory" if flops / nbytes < peak_bandwidth / peak_flops else "compute"
