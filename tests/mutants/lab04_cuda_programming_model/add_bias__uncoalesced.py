# mutant: x over rows and y over columns, grid to match: right values, but a warp walks down a column
# cell: add_bias
# replace: col, row = cuda.grid(2)
# with: row, col = cuda.grid(2)
# replace: grid = ((cols + 15) // 16, (rows + 15) // 16)
# with: grid = ((rows + 15) // 16, (cols + 15) // 16)
