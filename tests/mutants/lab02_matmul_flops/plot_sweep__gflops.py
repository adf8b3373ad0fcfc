# mutant: plots GFLOP/s while the axis says TFLOP/s
# cell: plot_sweep
def plot_sweep(ax, sizes, results, peaks):
    for dtype, values in results.items():
        ax.plot(sizes, [v * 1e3 for v in values], "o-", label=dtype)
        if peaks.get(dtype) is not None:
            ax.axhline(peaks[dtype] * 1e3, linestyle="--")
    ax.set_xscale("log", base=2)
    ax.set_ylabel("TFLOP/s")
