# mutant: the chain takes as long as its slowest kernel, as if its kernels overlapped
# cell: predicted_speedup
# replace: return sum(t(f, b) for f, b in ops) / t(*fused)
# with: return max(t(f, b) for f, b in ops) / t(*fused)
