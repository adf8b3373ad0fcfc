"""Flash attention as a plain Triton kernel: one loop over key blocks, every mask applied everywhere.

The teaching kernel (what lab 07 asks for), readable top to bottom: one program per block of
queries and batch entry keeps the online softmax's ``m``, ``l`` and accumulator in registers.
Also the launch helpers the tuned kernel (``attention.triton_tuned``) shares.

Public names, in order: ``attention_plain_kernel``, ``flash_attention_triton_plain``.
"""
from __future__ import annotations

from typing import Any

from .._launch import interpreting
from ..references import reference
from .reference import _check_qkv, _default_scale

try:        # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
    import triton
    import triton.language as tl
except ImportError:                     # the NumPy half works without Triton
    triton = None


try:
    import torch as _torch
    _Tensor = _torch.Tensor
    _DTYPES = (_torch.float16, _torch.bfloat16, _torch.float32)
except ImportError:                     # the NumPy half works without torch
    _Tensor, _DTYPES = (), ()


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcasting of batch shapes, in plain Python (``torch.broadcast_shapes`` goes
    through symbolic-shape machinery: tens of microseconds a call)."""
    if shapes[0] == shapes[1] == shapes[2]:
        return tuple(shapes[0])
    ndim = max(len(s) for s in shapes)
    out = []
    for dims in zip(*((1,) * (ndim - len(s)) + tuple(s) for s in shapes)):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"batch shapes {[tuple(s) for s in shapes]} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _prepare(q: Any, k: Any, v: Any, what: str):
    """Check torch q, k, v and view them as (Z, L, d) with a unit stride on d.

    Runs on every call, so it stays cheap (a few microseconds): plain comparisons, and a view
    (no copy) wherever the batch dims can be merged; only broadcast or oddly strided inputs
    are copied.
    """
    _prepare_checks(q, k, v, what)
    batch = _broadcast(q.shape[:-2], k.shape[:-2], v.shape[:-2])

    def flat(t):
        if tuple(t.shape[:-2]) != batch:
            t = t.expand(*batch, *t.shape[-2:])
        t = t.reshape(-1, *t.shape[-2:])                                   # (Z, L, d): a view when it can be
        return t if t.stride(-1) == 1 else t.contiguous()

    return flat(q), flat(k), flat(v), batch


def _prepare_checks(q: Any, k: Any, v: Any, what: str) -> None:
    if not (isinstance(q, _Tensor) and isinstance(k, _Tensor) and isinstance(v, _Tensor)):
        raise TypeError(f"{what} takes torch tensors (..., L, d); got {[type(t).__name__ for t in (q, k, v)]}")
    _check_qkv(q, k, v)
    if v.shape[-1] != q.shape[-1]:
        raise ValueError(f"{what} needs v's head dimension to equal q's: q {tuple(q.shape)}, v {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in _DTYPES:
        raise TypeError(f"q, k, v must share one of float16, bfloat16, float32; got {q.dtype}, {k.dtype}, {v.dtype}")
    device = q.device
    if not (device == k.device == v.device):
        raise ValueError(f"q, k, v are on different devices: {q.device}, {k.device}, {v.device}")
    if device.type != "cuda" and not interpreting():
        raise ValueError("Triton compiles kernels for the GPU: move q, k, v to 'cuda' "
                         "(or set TRITON_INTERPRET=1 before importing gpudl to run in the interpreter)")
    if q.shape[-1] > 256:
        raise ValueError(f"head dimension {q.shape[-1]} > 256 does not fit the kernel's tiles")


def _zl_strides(t: Any) -> tuple[int, int] | None:
    """(stride from one (batch, head) entry to the next, stride from row to row) of ``t``
    (..., L, d) read as (Z, L, d), when its batch dims merge into one without a copy."""
    shape, stride = t.shape, t.stride()
    if stride[-1] != 1:
        return None
    z_stride, expect = 0, None
    for i in range(len(shape) - 3, -1, -1):            # batch dims, innermost first
        if shape[i] == 1:
            continue
        if expect is not None and stride[i] != expect:
            return None
        if expect is None:
            z_stride = stride[i]
        expect = stride[i] * shape[i]
    return z_stride, stride[-2]


def _prepare_strides(q: Any, k: Any, v: Any, what: str):
    """``_prepare`` without views where none is needed: (q, k, v, batch, z, their (Z, L) strides).

    Same-shaped inputs whose batch dims merge are passed to the kernel as they are, with
    their strides worked out here; anything else (broadcast batch dims, a head dim that is not
    contiguous) goes through ``_prepare``'s views and copies.
    """
    if (isinstance(q, _Tensor) and isinstance(k, _Tensor) and isinstance(v, _Tensor) and q.dim() >= 2
            and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] and q.dtype == k.dtype == v.dtype):
        strides = (_zl_strides(q), _zl_strides(k), _zl_strides(v))
        if None not in strides:
            _prepare_checks(q, k, v, what)
            z = 1
            for n in q.shape[:-2]:
                z *= n
            return q, k, v, tuple(q.shape[:-2]), z, strides
    qf, kf, vf, batch = _prepare(q, k, v, what)
    return qf, kf, vf, batch, qf.shape[0], tuple((t.stride(0), t.stride(1)) for t in (qf, kf, vf))


if triton is not None:
    @triton.jit
    def attention_plain_kernel(Q, K, V, Out, stride_qz, stride_ql, stride_kz, stride_kl, stride_vz, stride_vl,
                               stride_oz, stride_ol, N_Q, N_K, scale,
                               HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
        # One program computes BLOCK_M rows of the output of one (batch, head) z.
        start_m = tl.program_id(0)
        z = tl.program_id(1).to(tl.int64)
        rows = start_m * BLOCK_M + tl.arange(0, BLOCK_M)            # query indices
        dims = tl.arange(0, BLOCK_D)
        q = tl.load(Q + z * stride_qz + rows[:, None] * stride_ql + dims[None, :],
                    mask=(rows[:, None] < N_Q) & (dims[None, :] < HEAD_DIM), other=0.0)      # (BLOCK_M, BLOCK_D)
        m = tl.full([BLOCK_M], float("-inf"), tl.float32)          # running max of each row's scores
        l = tl.zeros([BLOCK_M], tl.float32)                          # running sum of exp(score - m)
        acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)               # running sum of exp(score - m) * v
        end = N_K
        if CAUSAL:                                                   # keys right of the diagonal: skip
            end = tl.minimum(N_K, (start_m + 1) * BLOCK_M)
        for start_n in range(0, end, BLOCK_N):
            cols = start_n + tl.arange(0, BLOCK_N)                   # key indices
            kv_mask = (cols[:, None] < N_K) & (dims[None, :] < HEAD_DIM)
            k = tl.load(K + z * stride_kz + cols[:, None] * stride_kl + dims[None, :], mask=kv_mask, other=0.0)
            v = tl.load(V + z * stride_vz + cols[:, None] * stride_vl + dims[None, :], mask=kv_mask, other=0.0)
            s = tl.dot(q, tl.trans(k)) * scale                       # (BLOCK_M, BLOCK_N) scores
            visible = cols[None, :] < N_K                            # padding keys past the end: invisible
            if CAUSAL:
                visible = visible & (cols[None, :] <= rows[:, None])
            s = tl.where(visible, s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, 1))
            alpha = tl.exp(m - m_new)                                # rescales what was accumulated so far
            p = tl.exp(s - m_new[:, None])
            l = l * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m = m_new
        out = acc / l[:, None]
        tl.store(Out + z * stride_oz + rows[:, None] * stride_ol + dims[None, :], out.to(Out.dtype.element_ty),
                 mask=(rows[:, None] < N_Q) & (dims[None, :] < HEAD_DIM))


def _require_triton() -> None:
    if triton is None:
        raise ImportError("the Triton kernels need the triton package (pip install triton)")


def _launch_args(q, k, v, out, strides=None):
    """The kernels' leading arguments: q, k, v, out and their (Z, L) strides (``strides`` for q,
    k, v from ``_prepare_strides``; without it, from 3-D tensors). ``out`` is contiguous."""
    (sqz, sql), (skz, skl), (svz, svl) = strides or ((q.stride(0), q.stride(1)), (k.stride(0), k.stride(1)),
                                                     (v.stride(0), v.stride(1)))
    lq, d = out.shape[-2], out.shape[-1]
    return q, k, v, out, sqz, sql, skz, skl, svz, svl, lq * d, d


def _block_d(d: int) -> int:
    return max(16, 1 << (d - 1).bit_length())       # tl.arange and tl.dot want a power of two >= 16


@reference
def flash_attention_triton_plain(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None,
                                 block_m: int | None = None, block_n: int | None = None) -> Any:
    """Flash attention forward with the plain Triton kernel (torch tensors (..., L, d), d = dv).

    One program per (block of ``block_m`` queries, batch entry); a single loop over key
    blocks applies the bounds and causal masks everywhere. Blocks default to 16 in the
    interpreter and 64 on a GPU. FP32 inputs use TF32 tensor cores on a GPU (Triton's default).
    """
    _require_triton()
    qa, ka, va, batch, z, strides = _prepare_strides(q, k, v, "flash_attention_triton_plain")
    lq, d = qa.shape[-2], qa.shape[-1]
    lk = ka.shape[-2]
    bm = block_m or (16 if interpreting() else 64)
    bn = block_n or (16 if interpreting() else 64)
    out = _torch.empty((*batch, lq, d), dtype=q.dtype, device=q.device)
    grid = (-(-lq // bm), z)
    attention_plain_kernel[grid](*_launch_args(qa, ka, va, out, strides), lq, lk, _default_scale(d, scale),
                                 HEAD_DIM=d, BLOCK_D=_block_d(d), BLOCK_M=bm, BLOCK_N=bn, CAUSAL=bool(causal))
    return out
