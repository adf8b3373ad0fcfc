# mutant: fills buckets in forward order, from parameter 0: the first bucket is ready only when backward ends
# cell: plan_buckets
# replace: for i in reversed(range(len(param_bytes))):
# with: for i in range(len(param_bytes)):
