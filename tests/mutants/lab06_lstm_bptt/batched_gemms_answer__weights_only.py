# mutant: thinks dU must stay in the loop because it reads h_{t-1}
# cell: batched_gemms_answer
BATCHED_GEMMS_ANSWER = "AB"
