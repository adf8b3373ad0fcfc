# mutant: thinks TF32 underflows like FP16 because it has FP16 mantissa
# cell: tf32_question
TF32_ANSWER = "A"
