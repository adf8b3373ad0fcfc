# mutant: forgets the flat part of the roof (no min with the peak)
# cell: attainable
# fails: test_attainable, test_plot_roofline
def attainable(intensity, peak_flops, peak_bandwidth):
    return np.asarray(intensity, dtype=float) * peak_bandwidth
