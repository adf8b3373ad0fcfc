# mutant: credits the output gate
# cell: cell_gradient_answer
CELL_GRADIENT_ANSWER = "D"
