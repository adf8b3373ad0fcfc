# mutant: gives implicit GEMM the lowered matrix's workspace, as if it were GEMM (it builds its tiles on the fly: 0 bytes)
# cell: workspace_bytes
def workspace_bytes(algo, x_shape, w_shape, pad, stride, dilation, groups, bytes_per_element):
    n, c, h, width = x_shape
    k, cg, r, s = w_shape
    p, q = output_dim(h, r, pad, stride, dilation), output_dim(width, s, pad, stride, dilation)
    if algo in ("IMPLICIT_GEMM", "GEMM"):
        return n * c * r * s * p * q * bytes_per_element
    if algo == "WINOGRAD":
        tiles = n * math.ceil(p / 2) * math.ceil(q / 2)
        return 16 * (c * tiles + k * cg + k * tiles) * bytes_per_element
    raise ValueError(f"unknown algorithm {algo!r}")
