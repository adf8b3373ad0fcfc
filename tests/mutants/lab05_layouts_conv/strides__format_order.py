# mutant: returns the strides in the format's (memory) order instead of the logical order of dims
# cell: strides
def strides_for(dims, fmt):
    logical = "NCHW" if len(dims) == 4 else "NCDHW"
    size = dict(zip(logical, dims))
    stride, step = {}, 1
    for letter in reversed(fmt):
        stride[letter] = step
        step *= size[letter]
    return tuple(stride[letter] for letter in fmt)
