# mutant: reads dims as if they were listed in the format's order rather than N, C, H, W
# cell: strides
def strides_for(dims, fmt):
    logical = "NCHW" if len(dims) == 4 else "NCDHW"
    size = dict(zip(fmt, dims))
    stride, step = {}, 1
    for letter in reversed(fmt):
        stride[letter] = step
        step *= size[letter]
    return tuple(stride[letter] for letter in logical)
