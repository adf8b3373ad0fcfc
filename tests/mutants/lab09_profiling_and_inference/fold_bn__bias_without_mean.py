# mutant: scales the bias but forgets to subtract the running mean
# cell: fold_bn
# replace: return weight * scale[:, None, None, None], (bias - mean) * scale + beta
# with: return weight * scale[:, None, None, None], bias * scale + beta
