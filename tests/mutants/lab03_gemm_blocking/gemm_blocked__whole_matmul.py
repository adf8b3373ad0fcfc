# mutant: returns A @ B without blocking at all
# cell: gemm_blocked
def gemm_blocked(A, B, block):
    """C = A @ B as products of tiles of at most block x block (edge tiles smaller)."""
    return A @ B
