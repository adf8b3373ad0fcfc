# mutant: reads both curves as linear in L
# cell: memory_answers
MEMORY_GROWTH = (2, 2)
SCORES_GIB = 8 * 16 * 16384 * 16384 * 2 / 2**30
