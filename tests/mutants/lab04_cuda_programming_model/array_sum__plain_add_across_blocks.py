# mutant: thread 0 of each block adds its block's sum with out[0] += s[0], not an atomic: blocks race
# cell: array_sum
# replace: cuda.atomic.add(out, 0, s[0])
# with: out[0] += s[0]
