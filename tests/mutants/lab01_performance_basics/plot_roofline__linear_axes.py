# mutant: plots on linear axes
# cell: plot_roofline
def plot_roofline(ax, peak_flops, peak_bandwidth, ops):
    ridge = peak_flops / peak_bandwidth
    x = np.geomspace(ridge / 100, ridge * 100, 200)
    ax.plot(x, attainable(x, peak_flops, peak_bandwidth), color="black")
    for name, intensity in ops.items():
        ax.plot([intensity], [attainable(intensity, peak_flops, peak_bandwidth)], "o")
