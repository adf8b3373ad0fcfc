# mutant: thinks the reverse order saves bytes
# cell: answer_buckets
def answer_buckets():
    return "B"
