# mutant: warps named as the limiter
# cell: limiter_answer
LIMITER_ANSWER = "B"
