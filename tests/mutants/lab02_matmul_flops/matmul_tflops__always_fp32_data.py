# mutant: makes FP32 matrices whatever the dtype
# cell: matmul_tflops
TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def matmul_tflops(n, dtype, timer, matmul=torch.matmul, device=DEVICE):
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        seconds = timer(lambda: matmul(a, b))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return gemm_flops(n, n, n) / seconds / 1e12
