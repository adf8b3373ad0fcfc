# mutant: confuses global-memory sectors with shared-memory banks
# cell: stride_answer
STRIDE_ANSWER = "C"
