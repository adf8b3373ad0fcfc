# mutant: forgets the + 1 (the number of steps instead of the number of positions)
# cell: output_dim
# fails: test_output_dim, test_im2col, test_conv2d_gemm, test_workspace_bytes
def output_dim(h, r, pad, stride, dilation=1):
    span = (r - 1) * dilation + 1
    return (h + 2 * pad - span) // stride
