# mutant: the tensor's own layout, NHWC
# cell: flatten_layout
FLATTEN_LAYOUT = "NHWC"
