# mutant: keeps matrix multiplications in FP32 too
# cell: amp_question
AMP_FP32_ANSWER = "ABDE"
