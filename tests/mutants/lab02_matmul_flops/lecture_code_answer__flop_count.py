# mutant: blames the FLOP count
# cell: lecture_code_answer
LECTURE_CODE_ANSWER = "D"
