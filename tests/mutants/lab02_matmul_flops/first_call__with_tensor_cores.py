# mutant: also believes tensor cores start on the second call
# cell: first_call
FIRST_CALL = "ABCDE"
