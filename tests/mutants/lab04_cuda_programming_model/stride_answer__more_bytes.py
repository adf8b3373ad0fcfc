# mutant: believes each thread reads more bytes
# cell: stride_answer
STRIDE_ANSWER = "A"
