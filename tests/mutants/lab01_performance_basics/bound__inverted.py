# mutant: swaps the two labels
# cell: bound
def bound(flops, nbytes, peak_flops, peak_bandwidth):
    return "compute" if flops / nbytes < peak_flops / peak_bandwidth else "memory"
