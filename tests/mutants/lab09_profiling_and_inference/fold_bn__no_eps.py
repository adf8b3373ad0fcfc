# mutant: leaves epsilon out of the square root
# cell: fold_bn
# replace: scale = gamma / torch.sqrt(var + eps)
# with: scale = gamma / torch.sqrt(var)
