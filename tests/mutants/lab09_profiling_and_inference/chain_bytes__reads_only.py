# mutant: counts the reads and forgets the writes
# cell: chain_bytes
def chain_bytes(rows, cols, bytes_per_element):
    n = rows * cols
    return (4 * n + cols) * bytes_per_element, (2 * n + cols) * bytes_per_element
