# mutant: ignores dilation when picking the input values (taps stay adjacent)
# cell: im2col
# fails: test_im2col, test_conv2d_gemm
def im2col(x, r, s, pad, stride, dilation=1):
    n, c, h, w = x.shape
    p, q = output_dim(h, r, pad, stride, dilation), output_dim(w, s, pad, stride, dilation)
    xp = x.new_zeros(n, c, h + 2 * pad, w + 2 * pad)
    xp[:, :, pad:pad + h, pad:pad + w] = x
    cols = x.new_empty(n, c, r, s, p, q)
    for i in range(r):
        for j in range(s):
            cols[:, :, i, j] = xp[:, :, i: i + (p - 1) * stride + 1: stride, j: j + (q - 1) * stride + 1: stride]
    return cols.reshape(n, c * r * s, p * q)
