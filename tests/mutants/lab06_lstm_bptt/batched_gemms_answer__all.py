# mutant: thinks the recurrent dh can wait until after the loop too
# cell: batched_gemms_answer
BATCHED_GEMMS_ANSWER = "ABCD"
