# mutant: returns a percentage
# cell: fraction_of_peak
def fraction_of_peak(tflops, spec, dtype):
    fraction = tflops * 1e12 / hardware.peak_flops(spec, dtype)
    if fraction > 1:
        raise ValueError("above peak")
    return 100 * fraction
