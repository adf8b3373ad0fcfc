# mutant: N = n // block, forgetting the smaller edge tiles
# cell: blocked_traffic
def blocked_traffic(n, block):
    """Words moved by blocked GEMM of n x n matrices in block x block tiles."""
    N = n // block
    return (2 * N + 2) * n * n
