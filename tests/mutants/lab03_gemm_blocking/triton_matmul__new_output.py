# mutant: allocates and returns a new C instead of writing into the c it is given
# cell: triton_matmul
# replace: N = b.shape[1]
# with: N = b.shape[1]; c = torch.empty((M, N), dtype=a.dtype, device=a.device)
