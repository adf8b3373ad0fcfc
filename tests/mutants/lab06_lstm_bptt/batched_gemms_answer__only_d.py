# mutant: picks only the recurrent product
# cell: batched_gemms_answer
BATCHED_GEMMS_ANSWER = "D"
