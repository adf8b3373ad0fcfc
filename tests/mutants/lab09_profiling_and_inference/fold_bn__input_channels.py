# mutant: scales the weight along its input channels
# cell: fold_bn
# replace: return weight * scale[:, None, None, None], (bias - mean) * scale + beta
# with: return weight * scale[None, :, None, None], (bias - mean) * scale + beta
