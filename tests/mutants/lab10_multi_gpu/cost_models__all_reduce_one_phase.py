# mutant: times the all-reduce as one ring pass (k - 1 steps), forgetting the all-gather after the reduce-scatter
# cell: cost_models
# replace: return 2 * (k - 1) * (latency + n_bytes / (k * bandwidth))
# with: return (k - 1) * (latency + n_bytes / (k * bandwidth))
