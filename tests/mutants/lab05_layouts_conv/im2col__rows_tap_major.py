# mutant: orders the rows (i, j, c) instead of (c, i, j)
# cell: im2col
# fails: test_im2col, test_conv2d_gemm
def im2col(x, r, s, pad, stride, dilation=1):
    n, c, h, w = x.shape
    p, q = output_dim(h, r, pad, stride, dilation), output_dim(w, s, pad, stride, dilation)
    xp = x.new_zeros(n, c, h + 2 * pad, w + 2 * pad)
    xp[:, :, pad:pad + h, pad:pad + w] = x
    cols = x.new_empty(n, r, s, c, p, q)
    for i in range(r):
        for j in range(s):
            top, left = i * dilation, j * dilation
            cols[:, i, j] = xp[:, :, top: top + (p - 1) * stride + 1: stride, left: left + (q - 1) * stride + 1: stride]
    return cols.reshape(n, c * r * s, p * q)
