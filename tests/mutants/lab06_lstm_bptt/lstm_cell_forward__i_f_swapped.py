# mutant: reads the input gate i from the third block of z and the forget gate f from the second
# cell: lstm_cell_forward
# replace: i = sigmoid(z[:, H:2 * H])
# with: i = sigmoid(z[:, 2 * H:3 * H])
# replace: f = sigmoid(z[:, 2 * H:3 * H])
# with: f = sigmoid(z[:, H:2 * H])
