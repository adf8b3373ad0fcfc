# mutant: the left halo is loaded without a guard: block 0 reads x[-3] (Python wraps around, a GPU does not)
# cell: stencil
# replace: temp[t - RADIUS] = x[left] if left >= 0 else 0.0
# with: temp[t - RADIUS] = x[left]
