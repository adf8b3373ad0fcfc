# mutant: uses the tensor-core rate whenever the GPU has one, even with tensor_cores=False
# cell: peak_from_spec
def peak_from_spec(spec, dtype, tensor_cores=True):
    use_tensor = dtype in spec.tensor_fma_per_sm
    fma = spec.tensor_fma_per_sm[dtype] if use_tensor else spec.cuda_fma_per_sm[dtype]
    return spec.sms * fma * 2 * spec.clock_hz(use_tensor, dtype)
