# mutant: ignores dilation (the filter's span taken as r)
# cell: output_dim
# fails: test_output_dim, test_im2col, test_conv2d_gemm, test_workspace_bytes
def output_dim(h, r, pad, stride, dilation=1):
    return (h + 2 * pad - r) // stride + 1
