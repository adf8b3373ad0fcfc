# mutant: divides by 10^9 (GB) instead of 2^30 (GiB)
# cell: memory_answers
MEMORY_GROWTH = (4, 2)
SCORES_GIB = 8 * 16 * 16384 * 16384 * 2 / 1e9
