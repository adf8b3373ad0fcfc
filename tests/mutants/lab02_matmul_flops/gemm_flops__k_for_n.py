# mutant: uses the inner size twice instead of n
# cell: gemm_flops
def gemm_flops(m, n, k):
    return 2 * m * k * k
