# mutant: the filter is not flipped in CONVOLUTION mode
# cell: conv2d_gemm
def conv2d_gemm(x, w, pad, stride, dilation=1, groups=1, mode="CROSS_CORRELATION"):
    n, c, h, width = x.shape
    k, cg, r, s = w.shape
    p, q = output_dim(h, r, pad, stride, dilation), output_dim(width, s, pad, stride, dilation)
    cols = im2col(x, r, s, pad, stride, dilation).reshape(n, groups, cg * r * s, p * q)
    y = torch.matmul(w.reshape(groups, k // groups, cg * r * s), cols)
    return y.reshape(n, k, p, q)
