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
from .._launch import Relauncher, fastest, interpreting
from .triton_plain import _block_d, _launch_args, _prepare_strides, _require_triton, triton

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

    @triton.jit
    def _attention_tuned_fwd(Q, K, V, Out, stride_qz, stride_ql, stride_kz, stride_kl, stride_vz, stride_vl,
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

    # The configurations tried on a GPU, as (BLOCK_M, BLOCK_N, num_warps, num_stages): measured on
    # an H100 and an H200 (fp16/bf16, d = 64, L = 256..16384, causal and not; scripts/perf_sweep.py),
    # these eight hold the fastest one at every length within a few percent. 64-row tiles win at
    # short causal lengths (more programs, less work wasted on the diagonal), 128 x 64 with 8 warps
    # at long ones.
    TILES = ((64, 32, 4, 4), (64, 64, 4, 3), (64, 64, 4, 4), (128, 64, 4, 3),
             (128, 64, 4, 4), (128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 4, 3))
    if interpreting():
        TILES = ((16, 16, 4, 1),)

    # no bounds checks where the lengths fill whole tiles and d is a power of two; launched with
    # a fixed configuration (BLOCK_M=..., BLOCK_N=..., num_warps=..., num_stages=...), it works
    # out EVEN_M and EVEN_N itself
    _EVEN = {"EVEN_M": lambda a: _even(a["N_Q"], a["BLOCK_M"], a["HEAD_DIM"], a["BLOCK_D"]),
             "EVEN_N": lambda a: _even(a["N_K"], a["BLOCK_N"], a["HEAD_DIM"], a["BLOCK_D"])}
    attention_tuned_kernel = triton.heuristics(_EVEN)(_attention_tuned_fwd)


def _even(n: int, block: int, head_dim: int, block_d: int) -> bool:
    return n % block == 0 and head_dim == block_d


# (length bucket, d, causal, dtype, device) -> the autotuner's choice, one of TILES
_CHOSEN: dict[tuple, tuple[int, int, int, int]] = {}
_RELAUNCH = Relauncher(_attention_tuned_fwd) if triton is not None else None


def _chosen_label(lq: int, lk: int, d: int, causal: bool, dtype: Any, device: int) -> str:
    """The autotuner's choice for such a call, e.g. "128x64 w8 s3" ("" before the first call)."""
    c = _CHOSEN.get((1 << (max(lq, lk) - 1).bit_length(), d, bool(causal), dtype, device))
    return f"{c[0]}x{c[1]} w{c[2]} s{c[3]}" if c else ""


def _launch(tile: tuple[int, int, int, int], args: tuple, z: int, lq: int, lk: int, d: int, causal: bool,
            precision: str, tag: tuple) -> None:
    bm, bn, warps, stages = tile
    bd = _block_d(d)
    even_m, even_n = _even(lq, bm, d, bd), _even(lk, bn, d, bd)
    _RELAUNCH.launch((-(-lq // bm), z), args,
                     dict(HEAD_DIM=d, BLOCK_D=bd, CAUSAL=causal, PRECISION=precision, EVEN_M=even_m, EVEN_N=even_n,
                          BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, num_stages=stages), (tag, tile, even_m, even_n))


@reference
def flash_attention_triton(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """Flash attention forward, tuned: q (..., Lq, d), k, v (..., Lk, d) torch tensors -> (..., Lq, d).

    Follows the forward of Triton's fused-attention tutorial: ``log2(e)`` folded into the
    scale so the softmax uses ``exp2``; tiles and warps autotuned per (length bucket, head
    dimension, causal) on a GPU (one 16 x 16 configuration in the interpreter); for causal
    attention the blocks left of the diagonal run without computing a mask and only the
    diagonal block is masked; bounds checks only where a length is not a multiple of the tile.
    FP32 inputs use exact (IEEE) products, not TF32.

    The host's work per call is kept small, because at short lengths it is as long as the
    kernel (an H100 runs L = 512, batch 8, 16 heads in about 27 us): the autotuner (``fastest``,
    shared with the GEMM and the implicit GEMM: the GPU warmed first, the three fastest of
    ``TILES`` raced in turns) runs once per (length bucket, d, causal, dtype, device), and later
    calls launch the compiled kernel with the tile it chose, past the JIT's Python layers.
    """
    _require_triton()
    qa, ka, va, batch, z, strides = _prepare_strides(q, k, v, "flash_attention_triton")
    import torch

    lq, d = qa.shape[-2], qa.shape[-1]
    lk = ka.shape[-2]
    out = torch.empty((*batch, lq, d), dtype=q.dtype, device=q.device)
    key = 1 << (max(lq, lk) - 1).bit_length()            # tune once per power-of-two length bucket
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    args = (*_launch_args(qa, ka, va, out, strides), lq, lk, key, _default_scale(d, scale) * LOG2_E)
    causal = bool(causal)
    tag = (key, d, causal, q.dtype, q.get_device())
    tile = _CHOSEN.get(tag)
    if tile is None:                 # first call for this tag: time every tile (gpudl._launch.fastest)
        tile = _CHOSEN[tag] = TILES[0] if len(TILES) == 1 else fastest(
            TILES, lambda t: _launch(t, args, z, lq, lk, d, causal, precision, tag))
    _launch(tile, args, z, lq, lk, d, causal, precision, tag)
    return out
