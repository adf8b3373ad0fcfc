# mutant: rescales l to the common maximum but adds the accumulators as they are
# cell: online_softmax_merge
# fails: test_online_softmax_merge, test_tiled_attention
def online_softmax_merge(m_a, l_a, acc_a, m_b, l_b, acc_b):
    """The online-softmax state of the union of two blocks of keys: (m, l, acc)."""
    m = np.maximum(m_a, m_b)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    alpha, beta = np.exp(m_a - m_safe), np.exp(m_b - m_safe)
    return m, l_a * alpha + l_b * beta, acc_a + acc_b
