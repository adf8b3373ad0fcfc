# mutant: forgets to divide the scores by sqrt(d)
# cell: sdpa
# fails: test_sdpa, test_mhsa
def scaled_dot_product_attention(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(d), masked) v for NumPy arrays (..., L, d)."""
    lq, lk = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2)
    visible = np.ones((lq, lk), dtype=bool)
    if mask is not None:
        visible = visible & mask
    if causal:
        visible = visible & np.tril(np.ones((lq, lk), dtype=bool))
    s = np.where(visible, s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    total = np.sum(p, axis=-1, keepdims=True)
    return (p / np.where(total > 0, total, 1.0)) @ v
