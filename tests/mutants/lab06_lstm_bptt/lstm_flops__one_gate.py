# mutant: counts one gate instead of four
# cell: lstm_flops
def lstm_flops(T, N, D, H):
    return 2 * T * N * H * (D + H)
