# mutant: lets the fused kernel still write t and u to memory
# cell: chain_bytes
def chain_bytes(rows, cols, bytes_per_element):
    n = rows * cols
    unfused = (2 * n + cols) + 2 * n + 3 * n
    fused = 3 * n + cols + 2 * n
    return unfused * bytes_per_element, fused * bytes_per_element
