# mutant: counts k hops for the ring broadcast (S + k - 1 steps), as if the source received its own message
# cell: cost_models
# replace: return n_bytes * (chunks + k - 2) / (chunks * bandwidth)
# with: return n_bytes * (chunks + k - 1) / (chunks * bandwidth)
