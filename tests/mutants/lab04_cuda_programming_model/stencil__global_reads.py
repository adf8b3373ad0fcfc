# mutant: no shared memory: each thread reads its 7 inputs from global memory
# cell: stencil
RADIUS = 3
BLOCK = 64        # threads per block


@cuda.jit
def stencil_kernel(x, out, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        s = 0.0
        for offset in range(-RADIUS, RADIUS + 1):
            j = i + offset
            if 0 <= j < n:
                s += x[j]
        out[i] = s


def stencil(x):
    n = x.shape[0]
    out = np.zeros_like(x)
    stencil_kernel[(n + BLOCK - 1) // BLOCK, BLOCK](x, out, n)
    return out
