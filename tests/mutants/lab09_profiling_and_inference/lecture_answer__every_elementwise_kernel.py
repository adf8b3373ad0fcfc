# mutant: counts ReLU and add, which need epilogue fusion, not folding or a layout
# cell: lecture_answer
LECTURE_ANSWER = "ACDE"
