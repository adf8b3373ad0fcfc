# mutant: right numbers, but computes the whole score matrix at once instead of tile by tile
# cell: tiled_attention
def tiled_attention(q, k, v, block, causal=False):
    """Attention of q (Lq, d), k (Lk, d), v (Lk, dv) one (block x block) tile of scores at a time."""
    lq, d = q.shape
    lk = k.shape[0]
    s = q @ k.T / np.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((lq, lk), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v
