# mutant: quotes every peak at the boost clock (wrong for Hopper's tensor cores)
# cell: peak_from_spec
def peak_from_spec(spec, dtype, tensor_cores=True):
    use_tensor = tensor_cores and dtype in spec.tensor_fma_per_sm
    fma = spec.tensor_fma_per_sm[dtype] if use_tensor else spec.cuda_fma_per_sm[dtype]
    return spec.sms * fma * 2 * spec.boost_clock_mhz * 1e6
