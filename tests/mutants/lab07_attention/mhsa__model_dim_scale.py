# mutant: scales every head's scores by 1/sqrt(D_Q) of the whole model instead of 1/sqrt(D_Q/H)
# cell: mhsa
def multihead_self_attention(x, w_q, w_k, w_v, w_o, heads, causal=False):
    """Multi-head self-attention of x (..., N, D_x) with Q = X W_Q, ...; returns (..., N, D_out)."""
    def split(t):
        return np.swapaxes(t.reshape(*t.shape[:-1], heads, t.shape[-1] // heads), -2, -3)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    q = q / np.sqrt(heads)               # sdpa divides by sqrt(D_Q/H); this makes it sqrt(D_Q)
    y = np.swapaxes(scaled_dot_product_attention(q, k, v, causal=causal), -2, -3)
    return y.reshape(*y.shape[:-2], -1) @ w_o
