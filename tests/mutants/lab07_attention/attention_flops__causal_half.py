# mutant: takes causal attention as exactly half the pairs, ignoring the diagonal and Lq != Lk
# cell: attention_flops
def attention_flops(batch, heads, lq, lk, d, causal=False):
    """FLOPs of Q K^T and A V for `batch` x `heads` attentions (d_v = d)."""
    flops = 4 * batch * heads * lq * lk * d
    return flops // 2 if causal else flops
