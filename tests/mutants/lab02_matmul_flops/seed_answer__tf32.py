# mutant: blames TF32
# cell: seed_answer
SEED_ANSWER = "A"
