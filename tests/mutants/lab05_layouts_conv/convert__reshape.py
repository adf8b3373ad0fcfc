# mutant: reshapes instead of permuting (relabels the memory instead of moving it)
# cell: convert
def nchw_to_nhwc(x):
    n, c, h, w = x.shape
    return x.reshape(n, h, w, c)


def nhwc_to_nchw(x):
    n, h, w, c = x.shape
    return x.reshape(n, c, h, w)
