# mutant: draws only the bandwidth slope, no flat roof
# cell: plot_roofline
def plot_roofline(ax, peak_flops, peak_bandwidth, ops):
    ridge = peak_flops / peak_bandwidth
    x = np.geomspace(ridge / 100, ridge * 100, 200)
    ax.loglog(x, x * peak_bandwidth, color="black")
    for name, intensity in ops.items():
        ax.plot([intensity], [attainable(intensity, peak_flops, peak_bandwidth)], "o")
