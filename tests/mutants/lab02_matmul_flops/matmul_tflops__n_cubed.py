# mutant: counts n^3 FLOPs for an n^3 matmul instead of 2 n^3
# cell: matmul_tflops
TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def matmul_tflops(n, dtype, timer, matmul=torch.matmul, device=DEVICE):
    a = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    b = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    try:
        seconds = timer(lambda: matmul(a, b))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before
    return n ** 3 / seconds / 1e12
