"""The answers of lab07_attention, in the lab's reading order (the instructor's part only).

1. ``softmax``: numerically stable, along any axis (exercise 1).
2. ``scaled_dot_product_attention``: the naive form with bool or float masks and ``causal``
   (top-left triangle), rows that see no key give zeros (exercise 2).
3. ``split_heads``, ``merge_heads``, ``multihead_self_attention``: the lecture's ``Q = X W_Q``
   convention (exercise 3).
4. ``softmax_block_state``, ``online_softmax_merge``: the online softmax's state of one block
   and the merge of two (exercise 4).
5. ``flash_attention``: attention tiled over queries and keys in NumPy, never the L x L score
   matrix (exercise 5).
6. ``attention_flops``: FLOPs of ``Q K^T`` and ``P V``, causal pairs counted (exercise 6a).
7. The Triton forward kernels (exercise 7): ``attention_plain_kernel`` with its launcher
   ``flash_attention_triton_plain``, the teaching kernel the lab asks for; and the tuned one,
   ``attention_tuned_kernel`` with ``flash_attention_triton`` (``LOG2_E`` folded into the scale
   so the softmax uses ``exp2``, autotuned tiles, causal split into off-diagonal and diagonal
   blocks, little host work per call), which ``gpudl bench attention`` measures against torch's
   SDPA. Either launcher passes the lab's kernel check, so both stay here.

Masks follow torch: a boolean mask is True where a query may attend to a key, a float mask is
added to the scores, and ``causal=True`` lets query ``i`` attend to keys ``j <= i`` (aligned at
the top left, like ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``). A
query row that may attend to *no* key gets an output of zeros, as torch's does.

Moved here from the course edition's ``gpudl.attention`` (``reference``, ``tiled``,
``triton_plain``, ``triton_tuned`` and ``costs.attention_flops``); the course edition keeps the
lecture's tools (general attention, similarities, ``causal_mask``, torch's weights, the naive
torch form, parameter counts, memory models and ``peak_traced_bytes``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from gpudl._launch import Relauncher, fastest, interpreting
from gpudl.attention.reference import _arr, _blocks, _default_scale, causal_mask
from gpudl.references import reference

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


def _check_qkv(q: Any, k: Any, v: Any) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.ndim < 2:
            raise ValueError(f"{name} must have shape (..., L, d), got {t.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the head dimension: q {q.shape}, k {k.shape} "
                         "(scores are dot products of a query row with a key row)")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have one row per key: k {k.shape}, v {v.shape}")
    if k.shape[-2] == 0:
        raise ValueError("there must be at least one key")


# --- 1. softmax -------------------------------------------------------------------------------

@reference
def softmax(x: Any, axis: int = -1) -> np.ndarray:
    """``exp(x) / sum(exp(x))`` along ``axis``, without overflow.

    Subtracting each slice's maximum first leaves the result unchanged (the factor
    ``exp(-max)`` cancels) and keeps every exponent <= 0. A slice that is all ``-inf`` (a
    query with nothing to attend to) gives zeros instead of 0/0.
    """
    x = _arr(x, "x")
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1.0)


# --- 2. scaled dot-product attention ---------------------------------------------------------

@reference
def scaled_dot_product_attention(q: Any, k: Any, v: Any, mask: Any = None, scale: float | None = None,
                                 causal: bool = False) -> np.ndarray:
    """``softmax(q k^T * scale + mask) v``, the naive way: the whole score matrix at once.

    q (..., Lq, d), k (..., Lk, d), v (..., Lk, dv) -> (..., Lq, dv); batch dimensions
    broadcast. ``scale`` defaults to ``1/sqrt(d)``. ``mask``, broadcastable to (..., Lq, Lk): bool
    (True = attend) or float (added to the scores). ``causal`` combines with ``mask``. Rows
    with no key to attend to give zeros (see the module docstring).
    """
    q, k, v = _arr(q, "q"), _arr(k, "k"), _arr(v, "v")
    _check_qkv(q, k, v)
    lq, lk = q.shape[-2], k.shape[-2]
    s = (q @ np.swapaxes(k, -1, -2)) * _default_scale(q.shape[-1], scale)    # (..., Lq, Lk)
    if mask is not None:
        mask = np.asarray(mask.detach().cpu() if hasattr(mask, "detach") else mask)
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    if causal:
        s = np.where(causal_mask(lq, lk), s, -np.inf)
    return softmax(s, axis=-1) @ v                                         # (..., Lq, dv)


# --- 3. multi-head self-attention ------------------------------------------------------------

@reference
def split_heads(x: Any, heads: int) -> np.ndarray:
    """(..., N, D) -> (..., H, N, D/H): head h gets columns h*D/H .. (h+1)*D/H - 1."""
    x = _arr(x, "x")
    n, d = x.shape[-2:]
    if heads < 1 or d % heads:
        raise ValueError(f"heads={heads} must divide the feature dimension {d}")
    return np.swapaxes(x.reshape(*x.shape[:-1], heads, d // heads), -2, -3)


def merge_heads(x: Any) -> np.ndarray:
    """(..., H, N, Dh) -> (..., N, H*Dh), the inverse of ``split_heads``."""
    x = _arr(x, "x")
    h, n, dh = x.shape[-3:]
    return np.swapaxes(x, -2, -3).reshape(*x.shape[:-3], n, h * dh)


@reference
def multihead_self_attention(x: Any, w_q: Any, w_k: Any, w_v: Any, w_o: Any, heads: int, causal: bool = False,
                             mask: Any = None, b_q: Any = None, b_k: Any = None, b_v: Any = None,
                             b_o: Any = None) -> np.ndarray:
    """Multi-head self-attention of x (..., N, D_x) in the lecture's convention ``Q = X W_Q``.

    w_q, w_k (D_x, D_Q); w_v (D_x, D_V); w_o (D_V, D_out); optional biases. Each of the
    ``heads`` heads attends with its own D_Q/H columns of Q and K and D_V/H columns of V; their
    outputs are concatenated and projected: ``concat(head_1..head_H) W_O``. -> (..., N, D_out).
    ``mask`` (bool, True = attend) broadcasts to (..., H, N, N).
    """
    x = _arr(x, "x")
    w_q, w_k, w_v, w_o = (_arr(w, n) for w, n in ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v"), (w_o, "w_o")))
    if not (w_q.shape[0] == w_k.shape[0] == w_v.shape[0] == x.shape[-1]):
        raise ValueError(f"w_q, w_k, w_v must have D_x={x.shape[-1]} rows (Q = X W_Q): got "
                         f"{w_q.shape}, {w_k.shape}, {w_v.shape}; did you pass torch's (out, in) layout?")
    if w_q.shape != w_k.shape:
        raise ValueError(f"w_q and w_k must have the same shape, got {w_q.shape} and {w_k.shape}")
    if w_o.shape[0] != w_v.shape[1]:
        raise ValueError(f"w_o must have D_V={w_v.shape[1]} rows, got {w_o.shape}")

    def project(w, b):
        return x @ w if b is None else x @ w + _arr(b, "bias")

    qh = split_heads(project(w_q, b_q), heads)         # (..., H, N, D_Q/H)
    kh = split_heads(project(w_k, b_k), heads)         # (..., H, N, D_Q/H)
    vh = split_heads(project(w_v, b_v), heads)         # (..., H, N, D_V/H)
    y = scaled_dot_product_attention(qh, kh, vh, mask=mask, causal=causal)   # (..., H, N, D_V/H)
    out = merge_heads(y) @ w_o                          # (..., N, D_out)
    return out if b_o is None else out + _arr(b_o, "b_o")


# --- 4. the online softmax --------------------------------------------------------------------

@reference
def softmax_block_state(s: Any, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The online-softmax state of one block of scores s (..., R, n) with its values v (..., n, dv).

    ``m`` (..., R) the row maxima, ``l`` (..., R) the sums of ``exp(s - m)``, ``acc`` (..., R, dv)
    the unnormalised outputs ``exp(s - m) @ v``; the block's attention output is ``acc / l``.
    A row with no visible score (all ``-inf``) has ``m = -inf``, ``l = 0``, ``acc = 0``.
    """
    s, v = _arr(s, "s"), _arr(v, "v")
    m = np.max(s, axis=-1)
    p = np.exp(s - np.where(np.isfinite(m), m, 0.0)[..., None])
    return m, p.sum(axis=-1), p @ v


@reference
def online_softmax_merge(m_a: Any, l_a: Any, acc_a: Any, m_b: Any, l_b: Any,
                         acc_b: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge the states of two blocks of the same rows into the state of their union.

    With ``m = max(m_a, m_b)`` each state is rescaled to the common maximum:
    ``l = l_a e^(m_a - m) + l_b e^(m_b - m)`` and ``acc = acc_a e^(m_a - m) + acc_b e^(m_b - m)``.
    Exact: ``acc / l`` is the softmax-weighted average over both blocks. Rows empty in both
    blocks stay ``(-inf, 0, 0)``.
    """
    m_a, l_a, acc_a, m_b, l_b, acc_b = (_arr(t, n) for t, n in zip((m_a, l_a, acc_a, m_b, l_b, acc_b),
                                                                    ("m_a", "l_a", "acc_a", "m_b", "l_b", "acc_b")))
    m = np.maximum(m_a, m_b)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    alpha, beta = np.exp(m_a - m_safe), np.exp(m_b - m_safe)    # <= 1: nothing overflows
    return m, l_a * alpha + l_b * beta, acc_a * alpha[..., None] + acc_b * beta[..., None]


# --- 5. flash attention in NumPy ---------------------------------------------------------------

@reference
def flash_attention(q: Any, k: Any, v: Any, block: int | Sequence[int] = 64, causal: bool = False,
                    scale: float | None = None) -> np.ndarray:
    """Attention tiled over queries and keys with the online softmax (NumPy).

    Same contract as ``scaled_dot_product_attention`` (without a mask). ``block`` is the tile
    size, an int or (block_m, block_n). For each block of ``block_m`` queries it walks the
    keys ``block_n`` at a time, merging each tile's softmax state into a running one; with
    ``causal`` it stops at the diagonal. Working memory: a few (block_m, block_n) tiles and a
    (block_m, dv) accumulator per batch entry, plus the output: O(L d), never O(L^2).
    """
    q, k, v = _arr(q, "q"), _arr(k, "k"), _arr(v, "v")
    _check_qkv(q, k, v)
    bm, bn = _blocks(block)
    lq, lk, dv = q.shape[-2], k.shape[-2], v.shape[-1]
    scale = _default_scale(q.shape[-1], scale)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.empty((*batch, lq, dv), dtype=np.result_type(q, k, v))
    for i0 in range(0, lq, bm):
        i1 = min(i0 + bm, lq)
        qi = q[..., i0:i1, :] * scale                                   # (..., bm, d)
        m = np.full((*batch, i1 - i0), -np.inf)
        l = np.zeros((*batch, i1 - i0))
        acc = np.zeros((*batch, i1 - i0, dv))
        end = min(lk, i1) if causal else lk                             # keys past the diagonal: skipped
        for j0 in range(0, end, bn):
            j1 = min(j0 + bn, end)
            s = qi @ np.swapaxes(k[..., j0:j1, :], -1, -2)              # (..., bm, bn)
            if causal and j1 > i0:                                      # the tile crosses the diagonal
                s = np.where(np.arange(i0, i1)[:, None] >= np.arange(j0, j1)[None, :], s, -np.inf)
            state = softmax_block_state(s, v[..., j0:j1, :])
            m, l, acc = online_softmax_merge(m, l, acc, *state)
        out[..., i0:i1, :] = acc / l[..., None]                         # every row saw key 0: l > 0
    return out


# --- 6. FLOPs -----------------------------------------------------------------------------------

def _visible_pairs(lq: int, lk: int, causal: bool) -> int:
    """Number of (query, key) pairs that take part: lq*lk, or sum_i min(i + 1, lk) when causal."""
    if not causal:
        return lq * lk
    full = min(lq, lk)                   # rows 0..full-1 see i + 1 keys, later rows see all lk
    return full * (full + 1) // 2 + (lq - full) * lk


@reference
def attention_flops(lq: int, lk: int, d: int, dv: int | None = None, *, batch: int = 1, causal: bool = False) -> int:
    """FLOPs of the two matrix products of attention: ``Q K^T`` and ``P V``, 2 per multiply-add.

    ``batch`` counts batch x heads. Causal attention counts only the visible (query, key)
    pairs. The softmax (about 5 operations per score) is left out, as FlashAttention's and
    torch's FLOP counters do: on a GPU it runs beside the tensor-core products.
    General attention with one query against N_x inputs is ``attention_flops(1, N_x, D_Q, D_x)``.
    """
    dv = d if dv is None else dv
    if min(lq, lk, d, dv, batch) < 1:
        raise ValueError(f"sizes must be positive, got lq={lq}, lk={lk}, d={d}, dv={dv}, batch={batch}")
    return 2 * batch * _visible_pairs(lq, lk, causal) * (d + dv)


# --- 7. the Triton kernels -----------------------------------------------------------------------
#
# The plain kernel is the teaching kernel (what lab 07 asks for), readable top to bottom: one
# program per block of queries and batch entry keeps the online softmax's m, l and accumulator in
# registers, one loop over key blocks applies every mask everywhere. The host-side helpers below
# (checks, strides, launch arguments) serve both kernels.

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


# The tuned kernel: Triton's fused-attention tutorial forward, with bounds. log2(e) folded into the
# scale so the softmax uses exp2; tiles and warps autotuned per (length bucket, head dimension,
# causal) on a GPU; for causal attention the blocks left of the diagonal run without computing a
# mask and only the diagonal block is masked; bounds checks only where a length is not a multiple
# of the tile. Where performance work goes (`gpudl bench attention`).

LOG2_E = 1.4426950408889634        # exp(x) = exp2(x * log2(e))

if triton is not None:
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
