# mutant: restores TF32 after timing, but not in a `finally:`: a timer that raises leaves it changed
# cell: matmul_tflops
TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def matmul_tflops(n, dtype, timer, matmul=torch.matmul, device=DEVICE):
    a = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    b = torch.randn(n, n, device=device).to(TORCH_DTYPES[dtype])
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    seconds = timer(lambda: matmul(a, b))
    torch.backends.cuda.matmul.allow_tf32 = before
    return gemm_flops(n, n, n) / seconds / 1e12
