# mutant: hands the work to torch.conv3d with a depth of 1 (torch's 2-D convolution under another name), which the exercise forbids
# cell: conv2d_gemm
def conv2d_gemm(x, w, pad, stride, dilation=1, groups=1, mode="CROSS_CORRELATION"):
    if mode == "CONVOLUTION":
        w = w.flip(-2, -1)
    y = torch.conv3d(x[:, :, None], w[:, :, None], None, (1, stride, stride), (0, pad, pad),
                     (1, dilation, dilation), groups)
    return y[:, :, 0]
