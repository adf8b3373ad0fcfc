# mutant: returns the permuted view without copying it into the new order
# cell: convert
def nchw_to_nhwc(x):
    return x.permute(0, 2, 3, 1)


def nhwc_to_nchw(x):
    return x.permute(0, 3, 1, 2)
