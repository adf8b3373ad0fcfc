# mutant: divides by the variance instead of the standard deviation
# cell: fold_bn
# replace: scale = gamma / torch.sqrt(var + eps)
# with: scale = gamma / (var + eps)
