# mutant: no barrier inside the tree: a step reads partial sums the previous step has not finished
# cell: array_sum
SUM_BLOCK = 128


@cuda.jit
def sum_kernel(x, out, n):
    s = cuda.shared.array(SUM_BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SUM_BLOCK + t
    s[t] = x[i] if i < n else 0.0
    cuda.syncthreads()
    stride = SUM_BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        stride //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


def array_sum(x):
    n = x.shape[0]
    out = np.zeros(1, dtype=np.float32)
    sum_kernel[(n + SUM_BLOCK - 1) // SUM_BLOCK, SUM_BLOCK](x, out, n)
    return float(out[0])
