# mutant: uses the 2-bit index as the row of B, forgetting the group it belongs to
# cell: spmm
# replace: rows = 4 * (np.arange(half) // 2)[None, :] + indices
# with: rows = indices
