# mutant: turns TF32 on for 'tf32' but never off for 'fp32': a TF32 flag already on stays on
# cell: matmul_tflops
TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def matmul_tflops(n, dtype, timer, matmul=torch.matmul, device=DEVICE):
    a = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    b = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    before = torch.backends.cuda.matmul.allow_tf32
    if dtype == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
    try:
        seconds = timer(lambda: matmul(a, b))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return gemm_flops(n, n, n) / seconds / 1e12
