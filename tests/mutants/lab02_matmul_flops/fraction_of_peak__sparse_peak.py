# mutant: compares a dense matmul with the 2:4 sparse peak
# cell: fraction_of_peak
def fraction_of_peak(tflops, spec, dtype):
    try:
        peak = hardware.peak_flops(spec, dtype, sparse=True)
    except ValueError:
        peak = hardware.peak_flops(spec, dtype)
    fraction = tflops * 1e12 / peak
    if fraction > 1:
        raise ValueError("above peak")
    return fraction
