# mutant: applies the mask (and the causal triangle) to the weights after the softmax: rows no longer sum to 1
# cell: sdpa
# fails: test_sdpa, test_mhsa
def scaled_dot_product_attention(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(d), masked) v for NumPy arrays (..., L, d)."""
    lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    p = e / np.sum(e, axis=-1, keepdims=True)
    if mask is not None:
        p = np.where(mask, p, 0.0)
    if causal:
        p = np.where(np.tril(np.ones((lq, lk), dtype=bool)), p, 0.0)
    return p @ v
