# mutant: uses the CUDA-core peak for every dtype, ignoring the tensor cores
# cell: fraction_of_peak
def fraction_of_peak(tflops, spec, dtype):
    fraction = tflops * 1e12 / hardware.peak_flops(spec, "fp32" if dtype == "tf32" else dtype, tensor_cores=False)
    if fraction > 1:
        raise ValueError("above peak")
    return fraction
