# mutant: rescales by exp(m - m_a) instead of exp(m_a - m)
# cell: online_softmax_merge
# fails: test_online_softmax_merge, test_tiled_attention
def online_softmax_merge(m_a, l_a, acc_a, m_b, l_b, acc_b):
    """The online-softmax state of the union of two blocks of keys: (m, l, acc)."""
    m = np.maximum(m_a, m_b)
    with np.errstate(all="ignore"):
        alpha = np.where(np.isfinite(m_a), np.exp(m - m_a), 0.0)
        beta = np.where(np.isfinite(m_b), np.exp(m - m_b), 0.0)
    return m, l_a * alpha + l_b * beta, acc_a * alpha[..., None] + acc_b * beta[..., None]
