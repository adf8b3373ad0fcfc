# mutant: b = sqrt(M): room for one tile, not three
# cell: optimal_block
def optimal_block(fast_memory_words):
    """The largest b such that three b x b tiles fit in fast_memory_words."""
    import math
    return math.isqrt(fast_memory_words)
