# mutant: returns the final states as (c_T, h_T) instead of (h_T, c_T)
# cell: lstm_forward
# replace: return np.stack(outs), (h, c), caches
# with: return np.stack(outs), (c, h), caches
