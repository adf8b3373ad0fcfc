# mutant: forgets that exp needs FP32 range
# cell: amp_question
AMP_FP32_ANSWER = "BD"
