# mutant: uses Python's min, which cannot compare an array with a number
# cell: attainable
# fails: test_attainable, test_plot_roofline
def attainable(intensity, peak_flops, peak_bandwidth):
    return min(peak_flops, intensity * peak_bandwidth)
