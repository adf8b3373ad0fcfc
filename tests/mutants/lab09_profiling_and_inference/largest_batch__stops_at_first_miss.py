# mutant: walks the batches in order and stops at the first one over the budget
# cell: largest_batch
def largest_batch(batches, latencies_s, budget_s):
    best = None
    for b, t in sorted(zip(batches, latencies_s)):
        if t > budget_s:
            break
        best = b
    return best
