# mutant: puts the most frequent kernels first instead of the ones that take the most time
# cell: kernel_summary
# replace: rows.sort(key=lambda r: r["total_ns"], reverse=True)
# with: rows.sort(key=lambda r: r["instances"], reverse=True)
