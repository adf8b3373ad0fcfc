# mutant: counts multiply-adds (n^3), not FLOPs (2 n^3)
# cell: gemm_flops
# fails: test_gemm_flops, test_matmul_tflops
def gemm_flops(m, n, k):
    return m * n * k
