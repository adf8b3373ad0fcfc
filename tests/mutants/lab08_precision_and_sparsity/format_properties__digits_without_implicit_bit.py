# mutant: counts digits from the stored mantissa bits only, forgetting the implicit 1
# cell: format_properties
# replace: "digits": (m + 1) * math.log10(2)
# with: "digits": m * math.log10(2)
