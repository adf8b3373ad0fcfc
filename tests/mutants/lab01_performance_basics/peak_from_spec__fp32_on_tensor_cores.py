# mutant: runs "fp32" on the tensor cores at TF32's rate when tensor_cores is true (fp32 never runs there; tf32 is its own entry)
# cell: peak_from_spec
def peak_from_spec(spec, dtype, tensor_cores=True):
    mode = "tf32" if dtype == "fp32" else dtype
    use_tensor = tensor_cores and mode in spec.tensor_fma_per_sm
    fma = spec.tensor_fma_per_sm[mode] if use_tensor else spec.cuda_fma_per_sm[dtype]
    return spec.sms * fma * 2 * spec.clock_hz(use_tensor, mode)
