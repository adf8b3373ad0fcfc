# mutant: a kernel's time is the smaller of its math and memory times
# cell: predicted_speedup
# replace: return max(flops / peak, nbytes / bandwidth)
# with: return min(flops / peak, nbytes / bandwidth)
