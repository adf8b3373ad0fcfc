# mutant: takes the second block's maximum as the new m instead of the larger of the two
# cell: online_softmax_merge
def online_softmax_merge(m_a, l_a, acc_a, m_b, l_b, acc_b):
    """The online-softmax state of the union of two blocks of keys: (m, l, acc)."""
    m = np.where(np.isfinite(m_b), m_b, m_a)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    alpha, beta = np.exp(m_a - m_safe), np.exp(m_b - m_safe)
    return m, l_a * alpha + l_b * beta, acc_a * alpha[..., None] + acc_b * beta[..., None]
