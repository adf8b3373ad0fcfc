# mutant: counts multiply-adds, not FLOPs (2 L^2 d per head)
# cell: attention_flops
# replace: full = min(lq, lk)                                   # rows 0..full-1 see i + 1 keys, later rows all lk
# with: full = min(lq, lk)
# replace: return 4 * batch * heads * pairs * d
# with: return 2 * batch * heads * pairs * d
