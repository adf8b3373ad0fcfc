# mutant: divides TFLOP/s by a peak in FLOP/s
# cell: fraction_of_peak
def fraction_of_peak(tflops, spec, dtype):
    fraction = tflops / hardware.peak_flops(spec, dtype)
    if fraction > 1:
        raise ValueError("above peak")
    return fraction
