# mutant: thinks every tensor-core format needs loss scaling
# cell: tf32_question
TF32_ANSWER = "D"
