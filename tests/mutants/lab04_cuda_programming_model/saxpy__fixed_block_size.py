# mutant: ignores threads_per_block: always 128 threads per block, grid computed for M
# cell: saxpy
# replace: saxpy_kernel[blocks, threads_per_block](a, x, y, out, n)
# with: saxpy_kernel[blocks, 128](a, x, y, out, n)
