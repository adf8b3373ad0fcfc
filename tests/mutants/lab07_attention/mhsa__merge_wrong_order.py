# mutant: merges the heads with a reshape of (H, N, D/H) straight to (N, D), without transposing back
# cell: mhsa
# replace: def split(t):                                            # (..., N, D) -> (..., H, N, D/H)
# with: def split(t):
# replace: y = scaled_dot_product_attention(q, k, v, causal=causal)   # (..., H, N, D_V/H)
# with: y = scaled_dot_product_attention(q, k, v, causal=causal)
# replace: y = np.swapaxes(y, -2, -3)                                  # (..., N, H, D_V/H)
# with: n = x.shape[-2]
# replace: return y.reshape(*y.shape[:-2], -1) @ w_o                   # (..., N, D_out)
# with: return y.reshape(*y.shape[:-3], n, -1) @ w_o
