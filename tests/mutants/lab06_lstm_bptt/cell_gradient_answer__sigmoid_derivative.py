# mutant: believes the sigmoid's small derivative makes gradients grow
# cell: cell_gradient_answer
CELL_GRADIENT_ANSWER = "B"
