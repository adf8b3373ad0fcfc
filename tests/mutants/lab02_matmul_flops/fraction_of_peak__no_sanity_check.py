# mutant: never refuses a figure above peak
# cell: fraction_of_peak
def fraction_of_peak(tflops, spec, dtype):
    return tflops * 1e12 / hardware.peak_flops(spec, dtype)
