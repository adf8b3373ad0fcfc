# mutant: one barrier per tile: the next tile is loaded while other threads still read this one
# cell: matmul
TILE = 16


@cuda.jit
def matmul_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    m, k = A.shape
    n = B.shape[1]
    acc = 0.0
    for t0 in range(0, k, TILE):
        sA[ty, tx] = A[row, t0 + tx] if row < m and t0 + tx < k else 0.0
        sB[ty, tx] = B[t0 + ty, col] if t0 + ty < k and col < n else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
    if row < m and col < n:
        C[row, col] = acc


def matmul(A, B):
    m, n = A.shape[0], B.shape[1]
    C = np.zeros((m, n), dtype=np.float32)
    grid = ((n + TILE - 1) // TILE, (m + TILE - 1) // TILE)
    matmul_kernel[grid, (TILE, TILE)](A, B, C)
    return C
