# mutant: counts 4 bytes per score
# cell: memory_answers
MEMORY_GROWTH = (4, 2)
SCORES_GIB = 8 * 16 * 16384 * 16384 * 4 / 2**30
