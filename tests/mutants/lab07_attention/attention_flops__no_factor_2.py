# mutant: counts multiply-adds, not FLOPs (2 L^2 d per head)
# cell: attention_flops
def attention_flops(batch, heads, lq, lk, d, causal=False):
    """FLOPs of Q K^T and A V for `batch` x `heads` attentions (d_v = d)."""
    if causal:
        full = min(lq, lk)
        pairs = full * (full + 1) // 2 + (lq - full) * lk
    else:
        pairs = lq * lk
    return 2 * batch * heads * pairs * d
