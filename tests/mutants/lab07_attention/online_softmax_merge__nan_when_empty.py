# mutant: no guard for rows masked in both blocks: exp(-inf - (-inf)) makes them NaN
# cell: online_softmax_merge
def online_softmax_merge(m_a, l_a, acc_a, m_b, l_b, acc_b):
    """The online-softmax state of the union of two blocks of keys: (m, l, acc)."""
    m = np.maximum(m_a, m_b)
    with np.errstate(invalid="ignore"):
        alpha, beta = np.exp(m_a - m), np.exp(m_b - m)
    return m, l_a * alpha + l_b * beta, acc_a * alpha[..., None] + acc_b * beta[..., None]
