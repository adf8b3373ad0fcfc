# mutant: counts multiply-adds, not FLOPs
# cell: conv2d_flops
def conv2d_flops(in_shape, out_shape, kernel_size, bias=False):
    n, c, _, _ = in_shape
    _, k, p, q = out_shape
    return (kernel_size * kernel_size * c + (1 if bias else 0)) * n * k * p * q
