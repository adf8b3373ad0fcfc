# mutant: thinks NCCL imposes the order
# cell: answer_buckets
def answer_buckets():
    return "C"
