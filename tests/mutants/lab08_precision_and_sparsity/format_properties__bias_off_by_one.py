# mutant: takes the bias as 2^(e-1)
# cell: format_properties
# replace: bias = 2 ** (e - 1) - 1
# with: bias = 2 ** (e - 1)
