# mutant: returns the position of the batch instead of its size
# cell: largest_batch
def largest_batch(batches, latencies_s, budget_s):
    fitting = [i for i, t in enumerate(latencies_s) if t <= budget_s]
    return max(fitting, key=lambda i: batches[i]) if fitting else None
