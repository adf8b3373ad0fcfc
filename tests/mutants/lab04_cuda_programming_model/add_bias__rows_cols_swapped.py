# mutant: row, col = cuda.grid(2): x taken as the row, on a grid laid out for x over columns
# cell: add_bias
# replace: col, row = cuda.grid(2)
# with: row, col = cuda.grid(2)
