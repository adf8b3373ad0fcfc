# mutant: loops over whole blocks only, dropping the last rows and keys when L is not a multiple of block
# cell: tiled_attention
def tiled_attention(q, k, v, block, causal=False):
    """Attention of q (Lq, d), k (Lk, d), v (Lk, dv) one (block x block) tile of scores at a time."""
    lq, d = q.shape
    lk, dv = v.shape
    out = np.zeros((lq, dv))
    for i0 in range(0, lq - block + 1, block):
        i1 = i0 + block
        rows = np.arange(i0, i1)
        state = (np.full(block, -np.inf), np.zeros(block), np.zeros((block, dv)))
        end = min(lk, i1) if causal else lk
        for j0 in range(0, end - block + 1, block):
            j1 = j0 + block
            s = q[i0:i1] @ k[j0:j1].T / np.sqrt(d)
            if causal:
                s = np.where(rows[:, None] >= np.arange(j0, j1)[None, :], s, -np.inf)
            m = s.max(axis=1)
            p = np.exp(s - m[:, None])
            state = online_softmax_merge(*state, m, p.sum(axis=1), p @ v[j0:j1])
        out[i0:i1] = state[2] / state[1][:, None]
    return out
