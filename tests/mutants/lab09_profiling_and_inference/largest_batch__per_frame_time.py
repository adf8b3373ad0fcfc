# mutant: reads the budget as a throughput: compares each frame's share, latency / batch
# cell: largest_batch
# replace: fitting = [b for b, t in zip(batches, latencies_s) if t <= budget_s]
# with: fitting = [b for b, t in zip(batches, latencies_s) if t / b <= budget_s]
