# mutant: merges the heads with a reshape of (H, N, D/H) straight to (N, D), without transposing back
# cell: mhsa
def multihead_self_attention(x, w_q, w_k, w_v, w_o, heads, causal=False):
    """Multi-head self-attention of x (..., N, D_x) with Q = X W_Q, ...; returns (..., N, D_out)."""
    def split(t):
        return np.swapaxes(t.reshape(*t.shape[:-1], heads, t.shape[-1] // heads), -2, -3)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    y = scaled_dot_product_attention(q, k, v, causal=causal)
    n = x.shape[-2]
    return y.reshape(*y.shape[:-3], n, -1) @ w_o
