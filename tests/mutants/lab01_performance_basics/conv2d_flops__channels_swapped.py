# mutant: sums over the output channels K instead of the input channels C
# cell: conv2d_flops
def conv2d_flops(in_shape, out_shape, kernel_size, bias=False):
    n, c, _, _ = in_shape
    _, k, p, q = out_shape
    return 2 * (kernel_size * kernel_size * k + (1 if bias else 0)) * n * c * p * q
