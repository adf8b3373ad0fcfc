# mutant: takes the tanh of the product, h = tanh(o * c), instead of o * tanh(c)
# cell: lstm_cell_forward
# replace: h = o * np.tanh(c)
# with: h = np.tanh(o * c)
