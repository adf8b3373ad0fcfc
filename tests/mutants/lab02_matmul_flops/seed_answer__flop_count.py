# mutant: blames the FLOP count
# cell: seed_answer
SEED_ANSWER = "D"
