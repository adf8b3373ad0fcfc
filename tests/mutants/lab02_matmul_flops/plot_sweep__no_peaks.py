# mutant: plots the measurements but not the peaks
# cell: plot_sweep
def plot_sweep(ax, sizes, results, peaks):
    for dtype, values in results.items():
        ax.plot(sizes, values, "o-", label=dtype)
    ax.set_xscale("log", base=2)
    ax.set_ylabel("TFLOP/s")
    ax.legend()
