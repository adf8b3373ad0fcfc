# mutant: a linear x axis
# cell: plot_sweep
def plot_sweep(ax, sizes, results, peaks):
    for dtype, values in results.items():
        ax.plot(sizes, values, "o-", label=dtype)
        if peaks.get(dtype) is not None:
            ax.axhline(peaks[dtype], linestyle="--")
    ax.set_ylabel("TFLOP/s")
    ax.legend()
