# mutant: reads `order` innermost first (the last letter becomes the outermost loop)
# cell: gemm_loop_order
# replace: outer, middle, inner = order
# with: inner, middle, outer = order
