# mutant: draws the roof but not the operations
# cell: plot_roofline
def plot_roofline(ax, peak_flops, peak_bandwidth, ops):
    ridge = peak_flops / peak_bandwidth
    x = np.geomspace(ridge / 100, ridge * 100, 200)
    ax.loglog(x, attainable(x, peak_flops, peak_bandwidth), color="black")
