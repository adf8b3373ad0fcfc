# mutant: forgets the recurrent product h U^T
# cell: lstm_flops
def lstm_flops(T, N, D, H):
    return 2 * T * N * 4 * H * D
