# mutant: max instead of min
# cell: attainable
# fails: test_attainable, test_plot_roofline
def attainable(intensity, peak_flops, peak_bandwidth):
    return np.maximum(peak_flops, np.asarray(intensity, dtype=float) * peak_bandwidth)
