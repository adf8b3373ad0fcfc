# mutant: takes the largest value as 2^(emax + 1), forgetting that the mantissa stops at all ones
# cell: format_properties
# replace: "max": (2 - 2.0**-m) * 2.0**emax
# with: "max": 2.0 ** (emax + 1)
