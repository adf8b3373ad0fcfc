# mutant: CHWN
# cell: flatten_layout
FLATTEN_LAYOUT = "CHWN"
