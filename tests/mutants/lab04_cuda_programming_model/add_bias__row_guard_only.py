# mutant: the guard checks the row only: threads past the last column write outside the matrix
# cell: add_bias
# replace: if row < A.shape[0] and col < A.shape[1]:
# with: if row < A.shape[0]:
