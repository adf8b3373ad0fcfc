# mutant: returns the cell state first, (c, h, cache), instead of (h, c, cache)
# cell: lstm_cell_forward
# replace: return h, c, cache
# with: return c, h, cache
