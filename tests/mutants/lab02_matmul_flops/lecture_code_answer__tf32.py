# mutant: blames TF32
# cell: lecture_code_answer
LECTURE_CODE_ANSWER = "A"
