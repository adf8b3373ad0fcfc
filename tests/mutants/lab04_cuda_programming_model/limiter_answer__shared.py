# mutant: shared memory named as the limiter
# cell: limiter_answer
LIMITER_ANSWER = "D"
