# mutant: rounds every product to the input format (a tensor core keeps products exact)
# cell: matmul_format
# replace: np.outer(a[:, k], b[k, :])
# with: formats.round_to(np.outer(a[:, k], b[k, :]), inputs)
