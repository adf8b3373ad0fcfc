# mutant: ignores groups (one GEMM of all filters against all channels)
# cell: conv2d_gemm
def conv2d_gemm(x, w, pad, stride, dilation=1, groups=1, mode="CROSS_CORRELATION"):
    n, c, h, width = x.shape
    k, cg, r, s = w.shape
    if mode == "CONVOLUTION":
        w = w.flip(-2, -1)
    p, q = output_dim(h, r, pad, stride, dilation), output_dim(width, s, pad, stride, dilation)
    cols = im2col(x, r, s, pad, stride, dilation)
    y = torch.matmul(w.reshape(k, cg * r * s), cols[:, :cg * r * s])
    return y.reshape(n, k, p, q)
