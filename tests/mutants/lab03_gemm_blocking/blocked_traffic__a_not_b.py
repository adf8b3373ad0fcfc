# mutant: counts the N reads of A but not those of B
# cell: blocked_traffic
def blocked_traffic(n, block):
    """Words moved by blocked GEMM of n x n matrices in block x block tiles."""
    N = -(-n // block)
    return (N + 2) * n * n
