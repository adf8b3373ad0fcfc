# mutant: only the context creation
# cell: first_call
FIRST_CALL = "A"
