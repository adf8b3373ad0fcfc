# mutant: counts multiply-adds, not FLOPs
# cell: lstm_flops
def lstm_flops(T, N, D, H):
    return T * N * 4 * H * (D + H)
