# mutant: forgets to multiply the scores by scale
# cell: attention_kernel
# fails: test_attention_kernel, test_kernel_speed
@triton.jit
def attention_kernel(Q, K, V, Out, N_Q, N_K, scale,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Rows i*BLOCK_M .. of Out[z] = attention(Q[z], K[z], V[z]) for program (i, z)."""
    start_m = tl.program_id(0)
    z = tl.program_id(1)
    rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + z * N_Q * HEAD_DIM + rows[:, None] * HEAD_DIM + dims[None, :],
                mask=rows[:, None] < N_Q, other=0.0)                   # (BLOCK_M, HEAD_DIM)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    end = N_K
    if CAUSAL:
        end = tl.minimum(N_K, (start_m + 1) * BLOCK_M)
    for start_n in range(0, end, BLOCK_N):
        cols = start_n + tl.arange(0, BLOCK_N)
        kv_offsets = z * N_K * HEAD_DIM + cols[:, None] * HEAD_DIM + dims[None, :]
        k = tl.load(K + kv_offsets, mask=cols[:, None] < N_K, other=0.0)   # (BLOCK_N, HEAD_DIM)
        v = tl.load(V + kv_offsets, mask=cols[:, None] < N_K, other=0.0)
        s = tl.dot(q, tl.trans(k))                                        # (BLOCK_M, BLOCK_N)
        visible = cols[None, :] < N_K
        if CAUSAL:
            visible = visible & (cols[None, :] <= rows[:, None])
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        l = l * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = m_new
    out = acc / l[:, None]
    tl.store(Out + z * N_Q * HEAD_DIM + rows[:, None] * HEAD_DIM + dims[None, :], out.to(Out.dtype.element_ty),
             mask=rows[:, None] < N_Q)
