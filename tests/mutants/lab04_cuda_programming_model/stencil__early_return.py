# mutant: threads past n return before the barrier instead of being guarded
# cell: stencil
RADIUS = 3
BLOCK = 64        # threads per block
HALO_BLOCK = BLOCK + 2 * RADIUS


@cuda.jit
def stencil_kernel(x, out, n):
    temp = cuda.shared.array(HALO_BLOCK, float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i >= n:
        return
    t = cuda.threadIdx.x + RADIUS
    temp[t] = x[i]
    if cuda.threadIdx.x < RADIUS:
        left = i - RADIUS
        right = i + BLOCK
        temp[t - RADIUS] = x[left] if left >= 0 else 0.0
        temp[t + BLOCK] = x[right] if right < n else 0.0
    cuda.syncthreads()
    s = 0.0
    for offset in range(-RADIUS, RADIUS + 1):
        s += temp[t + offset]
    out[i] = s


def stencil(x):
    n = x.shape[0]
    out = np.zeros_like(x)
    stencil_kernel[(n + BLOCK - 1) // BLOCK, BLOCK](x, out, n)
    return out
