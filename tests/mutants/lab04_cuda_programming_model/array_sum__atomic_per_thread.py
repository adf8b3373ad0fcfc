# mutant: no tree: every thread adds its element atomically into out[0]
# cell: array_sum
SUM_BLOCK = 128


@cuda.jit
def sum_kernel(x, out, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        cuda.atomic.add(out, 0, x[i])


def array_sum(x):
    n = x.shape[0]
    out = np.zeros(1, dtype=np.float32)
    sum_kernel[(n + SUM_BLOCK - 1) // SUM_BLOCK, SUM_BLOCK](x, out, n)
    return float(out[0])
