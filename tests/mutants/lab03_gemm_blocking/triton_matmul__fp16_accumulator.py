# mutant: accumulates in FP16 instead of FP32
# cell: triton_matmul
# replace: acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
# with: acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)
