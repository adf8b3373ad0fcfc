# mutant: a query with no visible key gets NaN (-inf - (-inf)) instead of zeros
# cell: sdpa
def scaled_dot_product_attention(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(d), masked) v for NumPy arrays (..., L, d)."""
    lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    visible = np.ones((lq, lk), dtype=bool)
    if mask is not None:
        visible = visible & mask
    if causal:
        visible = visible & np.tril(np.ones((lq, lk), dtype=bool))
    s = np.where(visible, s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - np.max(s, axis=-1, keepdims=True))
        return (e / np.sum(e, axis=-1, keepdims=True)) @ v
