"""Flash attention, tuned: Triton's fused-attention tutorial forward, with bounds.

``log2(e)`` folded into the scale so the softmax uses ``exp2``; tiles and warps autotuned per
(length bucket, head dimension, causal) on a GPU; for causal attention the blocks left of the
diagonal run without computing a mask and only the diagonal block is masked; bounds checks
only where a length is not a multiple of the tile. The plain kernel (``attention.triton_plain``)
is the one to read first; this one is where performance work goes.

Public names, in order: ``LOG2_E``, ``attention_tuned_kernel``, ``flash_attention_triton``.
"""
from __future__ import annotations

from typing import Any

from ..references import reference
from .reference import _default_scale
from .triton_plain import _block_d, _interpreting, _launch_args, _prepare, _require_triton, triton

LOG2_E = 1.4426950408889634        # exp(x) = exp2(x * log2(e))

if triton is not None:
    import triton.language as tl

    @triton.jit
    def _attention_tuned_inner(acc, l_i, m_i, q, k_base, v_base, stride_kl, stride_vl, lo, hi,
                               offs_m, offs_n, offs_d, N_K, qk_scale,
                               HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
                               DIAGONAL: tl.constexpr, EVEN_N: tl.constexpr, PRECISION: tl.constexpr):
        """Online softmax over the key blocks [lo, hi) for one block of queries."""
        for start_n in range(lo, hi, BLOCK_N):
            start_n = tl.multiple_of(start_n, BLOCK_N)
            cols = start_n + offs_n
            kt_ptrs = k_base + cols[None, :] * stride_kl + offs_d[:, None]            # K^T tile (BLOCK_D, BLOCK_N)
            v_ptrs = v_base + cols[:, None] * stride_vl + offs_d[None, :]              # (BLOCK_N, BLOCK_D)
            if EVEN_N:
                kt = tl.load(kt_ptrs)
            else:
                kt = tl.load(kt_ptrs, mask=(cols[None, :] < N_K) & (offs_d[:, None] < HEAD_DIM), other=0.0)
            qk = tl.dot(q, kt, input_precision=PRECISION)
            if DIAGONAL:                   # the block on the diagonal: the causal mask applies
                keep = offs_m[:, None] >= cols[None, :]
                if not EVEN_N:
                    keep = keep & (cols[None, :] < N_K)
                qk = tl.where(keep, qk * qk_scale, float("-inf"))
                m_ij = tl.maximum(m_i, tl.max(qk, 1))
                qk = qk - m_ij[:, None]
            else:                          # left of the diagonal (or not causal): all visible
                if not EVEN_N:
                    qk = tl.where(cols[None, :] < N_K, qk, float("-inf"))
                m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
                qk = qk * qk_scale - m_ij[:, None]
            p = tl.math.exp2(qk)           # log2(e) is folded into qk_scale: exp2 is one instruction
            alpha = tl.math.exp2(m_i - m_ij)
            l_i = l_i * alpha + tl.sum(p, 1)
            if EVEN_N:
                v = tl.load(v_ptrs)
            else:
                v = tl.load(v_ptrs, mask=(cols[:, None] < N_K) & (offs_d[None, :] < HEAD_DIM), other=0.0)
            acc = acc * alpha[:, None]
            acc = tl.dot(p.to(v.dtype), v, acc, input_precision=PRECISION)
            m_i = m_ij
        return acc, l_i, m_i

    def keep_config(conf) -> bool:
        bm, bn = conf.kwargs["BLOCK_M"], conf.kwargs["BLOCK_N"]
        return bn <= bm and not (bm * bn < 128 * 128 and conf.num_warps == 8)

    if _interpreting():
        configs = [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=4, num_stages=1)]
    else:
        configs = [c for c in (triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
                               for bm in (64, 128) for bn in (32, 64, 128) for w in (4, 8) for s in (2, 3, 4))
                   if keep_config(c)]

    def prune_configs(configs, named_args, **kwargs):
        """Short sequences get one 64 x 64 configuration: little to gain, and every config is a compile."""
        if named_args["N_CTX_KEY"] <= 256:
            return [c for c in configs if (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages)
                    == (64, 64, 4, 2)][:1] or configs[:1]
        return configs

    @triton.autotune(configs=configs, key=["N_CTX_KEY", "HEAD_DIM", "CAUSAL"],
                     prune_configs_by={"early_config_prune": prune_configs}, cache_results=True)
    @triton.heuristics({   # no bounds checks where the lengths fill whole tiles and d is a power of two
        "EVEN_M": lambda a: a["N_Q"] % a["BLOCK_M"] == 0 and a["HEAD_DIM"] == a["BLOCK_D"],
        "EVEN_N": lambda a: a["N_K"] % a["BLOCK_N"] == 0 and a["HEAD_DIM"] == a["BLOCK_D"]})
    @triton.jit
    def attention_tuned_kernel(Q, K, V, Out, stride_qz, stride_ql, stride_kz, stride_kl, stride_vz, stride_vl,
                               stride_oz, stride_ol, N_Q, N_K, N_CTX_KEY, qk_scale,
                               HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, CAUSAL: tl.constexpr,
                               PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               EVEN_M: tl.constexpr, EVEN_N: tl.constexpr):
        start_m = tl.program_id(0)
        z = tl.program_id(1).to(tl.int64)
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, BLOCK_D)
        q_ptrs = Q + z * stride_qz + offs_m[:, None] * stride_ql + offs_d[None, :]
        if EVEN_M:
            q = tl.load(q_ptrs)                                     # stays in registers throughout
        else:
            q = tl.load(q_ptrs, mask=(offs_m[:, None] < N_Q) & (offs_d[None, :] < HEAD_DIM), other=0.0)
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
        k_base = K + z * stride_kz
        v_base = V + z * stride_vz
        if CAUSAL:
            # off the diagonal: keys left of this query block, no mask to compute
            acc, l_i, m_i = _attention_tuned_inner(
                acc, l_i, m_i, q, k_base, v_base, stride_kl, stride_vl, 0, tl.minimum(start_m * BLOCK_M, N_K),
                offs_m, offs_n, offs_d, N_K, qk_scale, HEAD_DIM, BLOCK_D, BLOCK_N, False, EVEN_N, PRECISION)
            # on the diagonal: the block of keys with the same indices, masked
            acc, l_i, m_i = _attention_tuned_inner(
                acc, l_i, m_i, q, k_base, v_base, stride_kl, stride_vl,
                start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, N_K),
                offs_m, offs_n, offs_d, N_K, qk_scale, HEAD_DIM, BLOCK_D, BLOCK_N, True, EVEN_N, PRECISION)
        else:
            acc, l_i, m_i = _attention_tuned_inner(
                acc, l_i, m_i, q, k_base, v_base, stride_kl, stride_vl, 0, N_K,
                offs_m, offs_n, offs_d, N_K, qk_scale, HEAD_DIM, BLOCK_D, BLOCK_N, False, EVEN_N, PRECISION)
        out = (acc / l_i[:, None]).to(Out.dtype.element_ty)
        o_ptrs = Out + z * stride_oz + offs_m[:, None] * stride_ol + offs_d[None, :]
        if EVEN_M:
            tl.store(o_ptrs, out)
        else:
            tl.store(o_ptrs, out, mask=(offs_m[:, None] < N_Q) & (offs_d[None, :] < HEAD_DIM))



@reference
def flash_attention_triton(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """Flash attention forward, tuned: q (..., Lq, d), k, v (..., Lk, d) torch tensors -> (..., Lq, d).

    Follows the forward of Triton's fused-attention tutorial: ``log2(e)`` folded into the
    scale so the softmax uses ``exp2``; tiles and warps autotuned per (length bucket, head
    dimension, causal) on a GPU (one 16 x 16 configuration in the interpreter); for causal
    attention the blocks left of the diagonal run without computing a mask and only the
    diagonal block is masked; bounds checks only where a length is not a multiple of the tile.
    FP32 inputs use exact (IEEE) products, not TF32.
    """
    _require_triton()
    qf, kf, vf, batch = _prepare(q, k, v, "flash_attention_triton")
    import torch

    z, lq, d = qf.shape
    lk = kf.shape[1]
    out = torch.empty((z, lq, d), dtype=q.dtype, device=q.device)
    key = 1 << (max(lq, lk) - 1).bit_length()            # tune once per power-of-two length bucket
    precision = "ieee" if q.dtype == torch.float32 else "tf32"

    def grid(meta):
        return (triton.cdiv(lq, meta["BLOCK_M"]), z)

    attention_tuned_kernel[grid](*_launch_args(qf, kf, vf, out), lq, lk, key, _default_scale(d, scale) * LOG2_E,
                                 HEAD_DIM=d, BLOCK_D=_block_d(d), CAUSAL=bool(causal), PRECISION=precision)
    return out.reshape(*batch, lq, d)
