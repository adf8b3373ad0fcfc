# mutant: makes the format's first letter move fastest (column-major reading of the format)
# cell: strides
def strides_for(dims, fmt):
    logical = "NCHW" if len(dims) == 4 else "NCDHW"
    size = dict(zip(logical, dims))
    stride, step = {}, 1
    for letter in fmt:
        stride[letter] = step
        step *= size[letter]
    return tuple(stride[letter] for letter in logical)
