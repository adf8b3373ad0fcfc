# mutant: scales every head's scores by 1/sqrt(D_Q) of the whole model instead of 1/sqrt(D_Q/H)
# cell: mhsa
# replace: def split(t):                                            # (..., N, D) -> (..., H, N, D/H)
# with: def split(t):
# replace: y = scaled_dot_product_attention(q, k, v, causal=causal)   # (..., H, N, D_V/H)
# with: q = q / np.sqrt(heads)               # sdpa divides by sqrt(D_Q/H); this makes it sqrt(D_Q)
# replace: y = np.swapaxes(y, -2, -3)                                  # (..., N, H, D_V/H)
# with: y = np.swapaxes(scaled_dot_product_attention(q, k, v, causal=causal), -2, -3)
# replace: return y.reshape(*y.shape[:-2], -1) @ w_o                   # (..., N, D_out)
# with: return y.reshape(*y.shape[:-2], -1) @ w_o
