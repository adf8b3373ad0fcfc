# mutant: forgets the bias vector's reads
# cell: chain_bytes
def chain_bytes(rows, cols, bytes_per_element):
    n = rows * cols
    return 7 * n * bytes_per_element, 3 * n * bytes_per_element
