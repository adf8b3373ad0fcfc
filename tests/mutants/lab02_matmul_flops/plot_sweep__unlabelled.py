# mutant: lines without labels: no way to tell the dtypes apart
# cell: plot_sweep
def plot_sweep(ax, sizes, results, peaks):
    for dtype, values in results.items():
        ax.plot(sizes, values, "o-")
        if peaks.get(dtype) is not None:
            ax.axhline(peaks[dtype], linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_ylabel("TFLOP/s")
