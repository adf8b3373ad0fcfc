# mutant: ignores the bias
# cell: conv2d_flops
def conv2d_flops(in_shape, out_shape, kernel_size, bias=False):
    n, c, _, _ = in_shape
    _, k, p, q = out_shape
    return 2 * kernel_size * kernel_size * c * n * k * p * q
