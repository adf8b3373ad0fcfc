# mutant: rounds sqrt(M / 3) up
# cell: optimal_block
def optimal_block(fast_memory_words):
    """The largest b such that three b x b tiles fit in fast_memory_words."""
    import math
    return math.ceil(math.sqrt(fast_memory_words / 3))
