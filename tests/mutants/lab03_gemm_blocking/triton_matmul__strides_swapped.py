# mutant: passes A's strides in the wrong order (column stride as row stride)
# cell: triton_matmul
# replace: a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
# with: a.stride(1), a.stride(0), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
