# mutant: takes the ratio of bytes, as if every kernel were memory-bound
# cell: predicted_speedup
def predicted_speedup(ops, fused, peak, bandwidth):
    return sum(b for _, b in ops) / fused[1]
