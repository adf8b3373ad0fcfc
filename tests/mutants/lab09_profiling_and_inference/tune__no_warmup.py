# mutant: times each candidate from its first, cold call
# cell: tune
# replace: for _ in range(warmup):
# with: for _ in range(0):
