# mutant: NCHW and NHWC swapped: each function applies the other one's permutation
# cell: convert
def nchw_to_nhwc(x):
    return x.permute(0, 3, 1, 2).contiguous()


def nhwc_to_nchw(x):
    return x.permute(0, 2, 3, 1).contiguous()
