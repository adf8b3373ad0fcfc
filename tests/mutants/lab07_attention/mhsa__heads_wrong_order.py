# mutant: splits heads with a reshape straight to (H, N, D/H), mixing tokens into heads
# cell: mhsa
def multihead_self_attention(x, w_q, w_k, w_v, w_o, heads, causal=False):
    """Multi-head self-attention of x (..., N, D_x) with Q = X W_Q, ...; returns (..., N, D_out)."""
    def split(t):
        *lead, n, d = t.shape
        return t.reshape(*lead, heads, n, d // heads)

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    y = scaled_dot_product_attention(q, k, v, causal=causal)
    y = np.swapaxes(y, -2, -3)
    return y.reshape(*y.shape[:-2], -1) @ w_o
