# mutant: no tiling: each thread reads its whole row of A and column of B from global memory
# cell: matmul
TILE = 16


@cuda.jit
def matmul_kernel(A, B, C):
    col, row = cuda.grid(2)
    m, k = A.shape
    n = B.shape[1]
    if row < m and col < n:
        acc = 0.0
        for j in range(k):
            acc += A[row, j] * B[j, col]
        C[row, col] = acc


def matmul(A, B):
    m, n = A.shape[0], B.shape[1]
    C = np.zeros((m, n), dtype=np.float32)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    matmul_kernel[grid, (TILE, TILE)](A, B, C)
    return C
