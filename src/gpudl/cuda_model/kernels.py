"""The lecture's kernels in numba-cuda, each with the host function that launches it.

They run compiled on a GPU and in numba-cuda's simulator on a CPU (``import gpudl`` first: it
chooses the simulator before numba is imported), and they pass the kernel checker. Reading
order follows the lecture, from SAXPY to the stencil and on to the patterns the labs build:

``saxpy_kernel`` / ``saxpy``            z = a x + y, one element per thread, the guard ``if i < n``
``add_bias_kernel`` / ``add_bias``      a 2-D grid over a matrix: out[r, c] = A[r, c] + b[c], x -> columns
``stencil_kernel`` / ``stencil``        the radius-3 1-D stencil, block and halo staged in shared memory
``matmul_kernel`` / ``matmul``          C = A B from TILE x TILE shared-memory tiles, two barriers per tile
``sum_kernel`` / ``array_sum``          a shared-memory tree per block, one atomic add per block
``copy_kernel`` / ``strided_copy``      dst[i] = src[i * stride]: coalescing, for the bandwidth sweep
``busy_kernel``                         the same fixed work in every block: the wave staircase

Block sizes that shared arrays depend on are module constants (a shared array's size must
be known when the kernel compiles): ``STENCIL_BLOCK``, ``RADIUS``, ``STENCIL_HALO_BLOCK``, ``TILE``, ``SUM_BLOCK``.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

RADIUS = 3
STENCIL_BLOCK = 128
TILE = 16
SUM_BLOCK = 128
# A shared array's size must be a constant when the kernel compiles: a sum of two names is not one to
# numba on a GPU (the simulator does not mind), a name bound to the sum is.
STENCIL_HALO_BLOCK = STENCIL_BLOCK + 2 * RADIUS


@cuda.jit
def saxpy_kernel(a, x, y, out, n):
    i = cuda.grid(1)           # numba's name for blockIdx.x * blockDim.x + threadIdx.x
    if i < n:
        out[i] = a * x[i] + y[i]


def saxpy(a: float, x: np.ndarray, y: np.ndarray, threads_per_block: int = 256) -> np.ndarray:
    """a * x + y, (n + M - 1) // M blocks of M threads."""
    n = x.shape[0]
    out = np.zeros_like(x)
    saxpy_kernel[(n + threads_per_block - 1) // threads_per_block, threads_per_block](a, x, y, out, n)
    return out


@cuda.jit
def add_bias_kernel(A, b, out):
    col, row = cuda.grid(2)          # x runs along a row: consecutive threads, consecutive addresses
    if row < A.shape[0] and col < A.shape[1]:
        out[row, col] = A[row, col] + b[col]


def add_bias(A: np.ndarray, b: np.ndarray, block: tuple[int, int] = (16, 16)) -> np.ndarray:
    """A + b (b added to every row), a 2-D grid: x over columns, y over rows."""
    rows, cols = A.shape
    out = np.zeros_like(A)
    grid = ((cols + block[0] - 1) // block[0], (rows + block[1] - 1) // block[1])
    add_bias_kernel[grid, block](A, b, out)
    return out


@cuda.jit
def stencil_kernel(x, out, n):
    temp = cuda.shared.array(STENCIL_HALO_BLOCK, float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    t = cuda.threadIdx.x + RADIUS
    temp[t] = x[i] if i < n else 0.0                     # the block's own inputs
    if cuda.threadIdx.x < RADIUS:                         # the halo on both sides
        left, right = i - RADIUS, i + STENCIL_BLOCK
        temp[t - RADIUS] = x[left] if 0 <= left < n else 0.0
        temp[t + STENCIL_BLOCK] = x[right] if right < n else 0.0
    cuda.syncthreads()                                    # every input is in shared memory
    if i < n:
        s = 0.0
        for offset in range(-RADIUS, RADIUS + 1):
            s += temp[t + offset]
        out[i] = s


def stencil(x: np.ndarray) -> np.ndarray:
    """out[i] = x[i-3] + ... + x[i+3] (zeros beyond the ends)."""
    n = x.shape[0]
    out = np.zeros_like(x)
    stencil_kernel[(n + STENCIL_BLOCK - 1) // STENCIL_BLOCK, STENCIL_BLOCK](x, out, n)
    return out


@cuda.jit
def matmul_kernel(A, B, C):
    sA = cuda.shared.array((TILE, TILE), float32)
    sB = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    m, k = A.shape
    n = B.shape[1]
    acc = 0.0
    for t0 in range(0, k, TILE):
        sA[ty, tx] = A[row, t0 + tx] if row < m and t0 + tx < k else 0.0
        sB[ty, tx] = B[t0 + ty, col] if t0 + ty < k and col < n else 0.0
        cuda.syncthreads()                                # the tiles are loaded
        for j in range(TILE):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()                                # everyone is done with them
    if row < m and col < n:
        C[row, col] = acc


def matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A @ B with TILE x TILE blocks of threads, one output element per thread."""
    m, n = A.shape[0], B.shape[1]
    C = np.zeros((m, n), dtype=A.dtype)
    matmul_kernel[((n + TILE - 1) // TILE, (m + TILE - 1) // TILE), (TILE, TILE)](A, B, C)
    return C


@cuda.jit
def sum_kernel(x, out, n):
    s = cuda.shared.array(SUM_BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SUM_BLOCK + t
    s[t] = x[i] if i < n else 0.0
    cuda.syncthreads()
    stride = SUM_BLOCK // 2
    while stride > 0:                                     # halve the active threads each step
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])                     # one atomic per block


def array_sum(x: np.ndarray) -> float:
    """The sum of x: a shared-memory tree per block, the blocks' sums added atomically."""
    n = x.shape[0]
    out = np.zeros(1, dtype=x.dtype)
    sum_kernel[(n + SUM_BLOCK - 1) // SUM_BLOCK, SUM_BLOCK](x, out, n)
    return float(out[0])


@cuda.jit
def copy_kernel(src, dst, stride):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < dst.shape[0]:
        dst[i] = src[i * stride]


def strided_copy(src: np.ndarray, n: int, stride: int, threads_per_block: int = 256):
    """dst[i] = src[i * stride] for i < n (``src`` holds at least (n - 1) * stride + 1 values)."""
    dst = np.zeros(n, dtype=src.dtype) if isinstance(src, np.ndarray) else cuda.device_array(n, dtype=src.dtype)
    copy_kernel[(n + threads_per_block - 1) // threads_per_block, threads_per_block](src, dst, stride)
    return dst


@cuda.jit
def busy_kernel(out, iterations):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    acc = float32(i)
    for _ in range(iterations):
        acc = acc * float32(0.999) + float32(1.0)
    out[i] = acc


__all__ = ["RADIUS", "STENCIL_BLOCK", "STENCIL_HALO_BLOCK", "TILE", "SUM_BLOCK", "saxpy_kernel", "saxpy", "add_bias_kernel", "add_bias",
           "stencil_kernel", "stencil", "matmul_kernel", "matmul", "sum_kernel", "array_sum", "copy_kernel",
           "strided_copy", "busy_kernel"]
