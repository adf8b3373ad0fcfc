# mutant: gives the unit roundoff 2^-(m+1) as machine epsilon
# cell: format_properties
# replace: {"eps": 2.0**-m,
# with: {"eps": 2.0 ** -(m + 1),
