# mutant: assumes square matrices and uses only m
# cell: gemm_flops
def gemm_flops(m, n, k):
    return 2 * m ** 3
