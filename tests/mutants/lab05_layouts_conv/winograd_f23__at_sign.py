# mutant: a sign error in A^T's second row
# cell: winograd_f23
# fails: test_winograd_f23, test_winograd_conv
BT = torch.tensor([[1.0, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=torch.float64)
G = torch.tensor([[1.0, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], dtype=torch.float64)
AT = torch.tensor([[1.0, 1, 1, 0], [0, 1, -1, 1]], dtype=torch.float64)


def winograd_f23(d, g):
    return AT @ ((G @ g) * (BT @ d))
