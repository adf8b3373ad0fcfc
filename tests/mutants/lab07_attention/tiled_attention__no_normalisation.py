# mutant: returns the accumulator without dividing by the running sum l
# cell: tiled_attention
def tiled_attention(q, k, v, block, causal=False):
    """Attention of q (Lq, d), k (Lk, d), v (Lk, dv) one (block x block) tile of scores at a time."""
    lq, d = q.shape
    lk, dv = v.shape
    out = np.empty((lq, dv))
    for i0 in range(0, lq, block):
        i1 = min(i0 + block, lq)
        rows = np.arange(i0, i1)
        state = (np.full(i1 - i0, -np.inf), np.zeros(i1 - i0), np.zeros((i1 - i0, dv)))
        end = min(lk, i1) if causal else lk
        for j0 in range(0, end, block):
            j1 = min(j0 + block, end)
            s = q[i0:i1] @ k[j0:j1].T / np.sqrt(d)
            if causal:
                s = np.where(rows[:, None] >= np.arange(j0, j1)[None, :], s, -np.inf)
            m = s.max(axis=1)
            p = np.exp(s - m[:, None])
            state = online_softmax_merge(*state, m, p.sum(axis=1), p @ v[j0:j1])
        out[i0:i1] = state[2]
    return out
