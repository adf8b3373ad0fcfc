# mutant: the all-reduce bus bandwidth factor with k instead of k - 1 (always 2)
# cell: cost_models
# replace: return 2 * (k - 1) / k
# with: return 2 * k / k
