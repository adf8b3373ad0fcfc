# mutant: always uses the CUDA-core rate
# cell: peak_from_spec
def peak_from_spec(spec, dtype, tensor_cores=True):
    return spec.sms * spec.cuda_fma_per_sm[dtype] * 2 * spec.clock_hz(False, dtype)
