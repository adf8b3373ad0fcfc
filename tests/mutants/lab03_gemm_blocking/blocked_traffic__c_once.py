# mutant: counts C once (written) but not its read
# cell: blocked_traffic
def blocked_traffic(n, block):
    """Words moved by blocked GEMM of n x n matrices in block x block tiles."""
    N = -(-n // block)
    return (2 * N + 1) * n * n
