# mutant: rounds sqrt(M / 3) to the nearest integer, so the three tiles can overflow fast memory
# cell: optimal_block
def optimal_block(fast_memory_words):
    """The largest b such that three b x b tiles fit in fast_memory_words."""
    return round((fast_memory_words / 3) ** 0.5)
