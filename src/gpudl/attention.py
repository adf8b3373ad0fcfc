"""Attention: from one query against a set of vectors to a tiled flash-attention kernel.

The lectures (seed 004, "Summary of Various Versions of Attention Algorithms") build attention
in steps, each generalising the last:

1. *General attention*: a query ``q`` (D_Q,) against input vectors ``X`` (N_x, D_x) with a
   similarity function ``f_att``::

       e_i = f_att(q, X_i)      a = softmax(e)      y = sum_i a_i X_i        (N_x,) (N_x,) (D_x,)

   Bahdanau's ``f_att`` is a small MLP; transformers use the scaled dot product
   ``q . X_i / sqrt(D_Q)``.
2. *Keys and values* with learnable weights, ``K = X W_K`` and ``V = X W_V``, and many queries at
   once: ``Y = softmax(Q K^T / sqrt(D_Q), dim=1) V``, two GEMMs around a row-wise softmax.
3. *Self-attention*: the queries come from the same input, ``Q = X W_Q``.
4. *Multi-head self-attention*: H independent heads, each on a slice of the columns of Q, K and
   V, concatenated and projected by ``W_O``. "LOTS of MM (BLAS3), Parallel".

Naive attention materialises the (N_Q, N_x) score matrix: O(N^2) memory, and on a GPU O(N^2)
bytes of DRAM traffic for a computation whose inputs and output are O(N d). *Flash attention*
tiles the keys and keeps, for each query row, a running maximum ``m`` and sum ``l`` of the
softmax (the *online softmax*): when a new block of scores raises the maximum from ``m`` to
``m'``, everything accumulated so far is rescaled by ``exp(m - m')``. The result is exact; the
score tiles never leave on-chip memory; the working memory is O(N d).

Masks follow torch: a boolean mask is True where a query may attend to a key, a float mask is
added to the scores, and ``causal=True`` lets query ``i`` attend to keys ``j <= i`` (aligned at
the top left, like ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``).
A query row that may attend to *no* key gets an output of zeros, as torch's reference does:
the softmax of an empty set is undefined (0/0), and zeros (an empty weighted sum) keep padding
rows from spreading NaN through the rest of a network.

Public names, in order:

``softmax``                         numerically stable, along any axis
``dot_similarity``, ``scaled_dot_similarity``, ``additive_similarity``   choices of f_att
``general_attention``               one or many queries against X, optional W_K and W_V
``causal_mask``, ``scaled_dot_product_attention``   Q K^T, mask, softmax, times V (NumPy)
``split_heads``, ``merge_heads``, ``multihead_self_attention``
``MultiheadWeights``, ``weights_from_torch``   torch.nn.MultiheadAttention's weights as W_Q, W_K, W_V, W_O
``softmax_block_state``, ``online_softmax_merge``   the online softmax's state and its merge
``flash_attention``                 tiled, online softmax, NumPy; never holds the N x N matrix
``naive_attention_torch``           the three-kernel version in torch (any device)
``attention_plain_kernel``, ``flash_attention_triton_plain``   a readable Triton forward: one loop, every mask
``attention_tuned_kernel``, ``flash_attention_triton``   the tuned Triton forward: exp2 with log2(e) in the
                                    scale, autotuned tiles, causal split into off-diagonal and diagonal blocks
``attention_flops``, ``multihead_self_attention_flops``, ``multihead_self_attention_params``,
``transformer_block_params``, ``transformer_params``, ``ModelSize``, ``MODEL_SIZES``   what it costs
``attention_workspace_bytes``, ``attention_dram_bytes``   memory and DRAM traffic models
``peak_traced_bytes``               measure the peak NumPy memory of a call (tracemalloc)
``BENCHMARKS``                      ``gpudl bench attention``
"""
from __future__ import annotations

import argparse
import math
import os
import tracemalloc
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from .hardware import bytes_per_element
from .references import reference

try:        # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
    import triton
    import triton.language as tl
except ImportError:                     # the NumPy half works without Triton
    triton = None

LOG2_E = 1.4426950408889634        # exp(x) = exp2(x * log2(e))


# --- small helpers ---------------------------------------------------------------------------

def _arr(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.dtype.kind not in "fiub":
        raise TypeError(f"{name} must hold numbers, got dtype {a.dtype}")
    return a if a.dtype.kind == "f" else a.astype(np.float64)


def _default_scale(d: int, scale: float | None) -> float:
    if scale is None:
        return 1.0 / math.sqrt(d)
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    return float(scale)


def _check_qkv(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
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


def _blocks(block: int | Sequence[int]) -> tuple[int, int]:
    bm, bn = (block, block) if isinstance(block, (int, np.integer)) else tuple(block)
    if int(bm) < 1 or int(bn) < 1:
        raise ValueError(f"block sizes must be positive, got {block}")
    return int(bm), int(bn)


# --- 1. softmax and general attention ------------------------------------------------------

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


def dot_similarity(q: Any, keys: Any) -> np.ndarray:
    """``e = q . keys_i``: q (D,) or (N_q, D), keys (N_x, D) -> (N_x,) or (N_q, N_x)."""
    return _arr(q, "q") @ _arr(keys, "keys").T


def scaled_dot_similarity(q: Any, keys: Any) -> np.ndarray:
    """``e = q . keys_i / sqrt(D)``: the seed's choice, so scores do not grow with D."""
    keys = _arr(keys, "keys")
    return dot_similarity(q, keys) / math.sqrt(keys.shape[-1])


def additive_similarity(w_q: Any, w_k: Any, w_e: Any) -> Callable[[Any, Any], np.ndarray]:
    """Bahdanau's f_att, an MLP with one hidden layer of A units:
    ``e_i = tanh(q W_q + keys_i W_k) . w_e`` with w_q (D_q, A), w_k (D_x, A), w_e (A,)."""
    w_q, w_k, w_e = _arr(w_q, "w_q"), _arr(w_k, "w_k"), _arr(w_e, "w_e")

    def similarity(q: Any, keys: Any) -> np.ndarray:
        hidden = np.tanh((_arr(q, "q") @ w_q)[..., None, :] + _arr(keys, "keys") @ w_k)  # (..., N_x, A)
        return hidden @ w_e                                                            # (..., N_x)

    return similarity


def general_attention(q: Any, x: Any, similarity: Callable[[Any, Any], np.ndarray] = scaled_dot_similarity,
                      w_k: Any = None, w_v: Any = None) -> np.ndarray:
    """The seed's general attention layer.

    q (D_Q,) or (N_Q, D_Q); x (N_x, D_x). Keys are ``x @ w_k`` (or ``x``), values ``x @ w_v``
    (or ``x``); scores ``similarity(q, keys)``, weights their softmax over the inputs, and the
    output the weighted sum of the values: (D_V,) or (N_Q, D_V).
    """
    x = _arr(x, "x")
    if x.ndim != 2:
        raise ValueError(f"x must be (N_x, D_x), got {x.shape}")
    keys = x if w_k is None else x @ _arr(w_k, "w_k")      # (N_x, D_Q)
    values = x if w_v is None else x @ _arr(w_v, "w_v")    # (N_x, D_V)
    e = similarity(q, keys)                                 # (N_x,) or (N_Q, N_x)
    return softmax(e, axis=-1) @ values


# --- 2. scaled dot-product attention ---------------------------------------------------------

def causal_mask(lq: int, lk: int | None = None) -> np.ndarray:
    """Boolean (lq, lk), True where query i may attend to key j, i.e. j <= i (top-left aligned)."""
    lk = lq if lk is None else lk
    return np.tril(np.ones((lq, lk), dtype=bool))


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
    """Multi-head self-attention of x (..., N, D_x) in the seed's convention ``Q = X W_Q``.

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


class MultiheadWeights(NamedTuple):
    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    b_q: np.ndarray | None
    b_k: np.ndarray | None
    b_v: np.ndarray | None
    b_o: np.ndarray | None


def weights_from_torch(mha: Any) -> MultiheadWeights:
    """The weights of a ``torch.nn.MultiheadAttention`` in this module's ``Q = X W_Q`` layout.

    torch stacks the three input projections as ``in_proj_weight`` (3D, D) in (out, in)
    layout (``Q = X W^T``), so ``w_q`` is the transpose of its first D rows; ``out_proj.weight``
    transposed is ``w_o``. Use as ``multihead_self_attention(x, *w[:4], heads, b_q=w.b_q, ...)``.
    """
    if getattr(mha, "in_proj_weight", None) is None:
        raise ValueError("this MultiheadAttention has separate q/k/v projections (kdim/vdim set); "
                         "only the packed in_proj_weight layout is supported")
    w = mha.in_proj_weight.detach().cpu().double().numpy()
    d = w.shape[1]
    b = mha.in_proj_bias.detach().cpu().double().numpy() if mha.in_proj_bias is not None else None
    w_o = mha.out_proj.weight.detach().cpu().double().numpy().T
    b_o = mha.out_proj.bias.detach().cpu().double().numpy() if mha.out_proj.bias is not None else None
    parts = [w[i * d:(i + 1) * d].T for i in range(3)]
    biases = [None] * 3 if b is None else [b[i * d:(i + 1) * d] for i in range(3)]
    return MultiheadWeights(*parts, w_o, *biases, b_o)


# --- 4. the online softmax -------------------------------------------------------------------

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


# --- 5. torch and Triton ---------------------------------------------------------------------

def naive_attention_torch(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """Attention as three kernels in torch (any device): the (..., Lq, Lk) scores and their
    softmax are written to memory and read back. The baseline flash attention removes."""
    import torch

    s = (q @ k.transpose(-1, -2)) * _default_scale(q.shape[-1], scale)     # (..., Lq, Lk)
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, dim=-1) @ v                                    # (..., Lq, dv)


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _prepare(q: Any, k: Any, v: Any, what: str):
    """Check torch q, k, v and view them as (Z, L, d) with a unit stride on d."""
    import torch

    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)):
        raise TypeError(f"{what} takes torch tensors (..., L, d); got {[type(t).__name__ for t in (q, k, v)]}")
    _check_qkv(q, k, v)
    if v.shape[-1] != q.shape[-1]:
        raise ValueError(f"{what} needs v's head dimension to equal q's: q {tuple(q.shape)}, v {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"q, k, v must share one of float16, bfloat16, float32; got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v are on different devices: {q.device}, {k.device}, {v.device}")
    if q.device.type != "cuda" and not _interpreting():
        raise ValueError("Triton compiles kernels for the GPU: move q, k, v to 'cuda' "
                         "(or set TRITON_INTERPRET=1 before importing gpudl to run in the interpreter)")
    d = q.shape[-1]
    if d > 256:
        raise ValueError(f"head dimension {d} > 256 does not fit the kernel's tiles")
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])

    def flat(t):
        t = t.expand(*batch, *t.shape[-2:]).reshape(-1, *t.shape[-2:])      # (Z, L, d)
        return t if t.stride(-1) == 1 else t.contiguous()

    return flat(q), flat(k), flat(v), batch


if triton is not None:
    # ---- the plain kernel: what lab 07 asks for, readable top to bottom ----
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

    # ---- the tuned kernel: Triton's fused-attention tutorial forward, with bounds ----
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


def _require_triton() -> None:
    if triton is None:
        raise ImportError("the Triton kernels need the triton package (pip install triton)")


def _launch_args(q, k, v, out):
    return (q, k, v, out, q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
            out.stride(0), out.stride(1))


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
    qf, kf, vf, batch = _prepare(q, k, v, "flash_attention_triton_plain")
    import torch

    z, lq, d = qf.shape
    lk = kf.shape[1]
    bm = block_m or (16 if _interpreting() else 64)
    bn = block_n or (16 if _interpreting() else 64)
    out = torch.empty((z, lq, d), dtype=q.dtype, device=q.device)
    grid = (triton.cdiv(lq, bm), z)
    attention_plain_kernel[grid](*_launch_args(qf, kf, vf, out), lq, lk, _default_scale(d, scale),
                                 HEAD_DIM=d, BLOCK_D=_block_d(d), BLOCK_M=bm, BLOCK_N=bn, CAUSAL=bool(causal))
    return out.reshape(*batch, lq, d)


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


# --- 6. what it costs --------------------------------------------------------------------------

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


def multihead_self_attention_flops(n: int, d_model: int, heads: int, *, batch: int = 1, causal: bool = False) -> int:
    """FLOPs of multi-head self-attention on ``batch`` sequences of ``n`` tokens:
    four projections (Q, K, V, O), ``4 x 2 n D^2``, plus the heads' attention, ``4 n^2 D``."""
    if d_model % heads:
        raise ValueError(f"heads={heads} must divide d_model={d_model}")
    projections = 4 * 2 * batch * n * d_model * d_model
    return projections + attention_flops(n, n, d_model // heads, batch=batch * heads, causal=causal)


def multihead_self_attention_params(d_model: int, *, bias: bool = True) -> int:
    """W_Q, W_K, W_V, W_O (D x D each) and their biases: ``4 D^2 + 4 D``."""
    return 4 * d_model * d_model + (4 * d_model if bias else 0)


def transformer_block_params(d_model: int, d_ff: int | None = None, *, bias: bool = True) -> int:
    """A transformer block: multi-head self-attention, an MLP D -> d_ff -> D (d_ff = 4D by
    default) and two layer norms (a scale and a shift each): ``12 D^2 + 13 D`` for d_ff = 4D."""
    d_ff = 4 * d_model if d_ff is None else d_ff
    mlp = 2 * d_model * d_ff + ((d_ff + d_model) if bias else 0)
    return multihead_self_attention_params(d_model, bias=bias) + mlp + 4 * d_model


def transformer_params(layers: int, d_model: int, *, vocab: int = 0, max_len: int = 0,
                       d_ff: int | None = None) -> int:
    """``layers`` blocks plus token (vocab x D) and position (max_len x D) embeddings."""
    return layers * transformer_block_params(d_model, d_ff) + (vocab + max_len) * d_model


class ModelSize(NamedTuple):
    name: str
    layers: int
    width: int
    heads: int | None
    params: float        # as quoted in the seed


# The seed's table (seed 004, "Scaling to bigger and larger transformer blocks").
MODEL_SIZES = (
    ModelSize("Transformer-Base", 12, 512, 8, 65e6),
    ModelSize("Transformer-Large", 12, 1024, 16, 213e6),
    ModelSize("BERT-Base", 12, 768, 12, 110e6),
    ModelSize("BERT-Large", 24, 1024, 16, 340e6),
    ModelSize("XLNet-Large", 24, 1024, 16, 340e6),
    ModelSize("RoBERTa", 24, 1024, 16, 355e6),
    ModelSize("GPT-2", 48, 1600, None, 1.5e9),
    ModelSize("Megatron-LM", 72, 3072, 32, 8.3e9),
    ModelSize("Turing-NLG", 78, 4256, 28, 17e9),
    ModelSize("GPT-3", 96, 12288, 96, 175e9),
)


def attention_workspace_bytes(lq: int, lk: int, dv: int, *, batch: int = 1, dtype: Any = "fp32",
                              method: str = "naive", block: int | Sequence[int] = 64) -> int:
    """Working memory beyond the inputs and the output.

    "naive": the (Lq, Lk) score matrix per batch entry (its softmax can overwrite it).
    "flash": per batch entry, one (block_m, block_n) score tile, a (block_m, dv) accumulator
    and two statistics per row: independent of Lk, and O(Lq d) summed over query blocks.
    """
    size = int(bytes_per_element(dtype))
    if method == "naive":
        return batch * lq * lk * size
    if method == "flash":
        bm, bn = _blocks(block)
        bm, bn = min(bm, lq), min(bn, lk)
        return batch * (bm * bn + bm * dv + 2 * bm) * size
    raise ValueError(f"method must be 'naive' or 'flash', got {method!r}")


def attention_dram_bytes(lq: int, lk: int, d: int, dv: int | None = None, *, batch: int = 1,
                         dtype: Any = "fp16", method: str = "naive", block_m: int = 128) -> int:
    """Bytes moved to and from DRAM (a model: every read misses the cache).

    "naive", three kernels: ``S = Q K^T`` reads Q, K and writes S; the softmax reads S and
    writes P; ``O = P V`` reads P and V and writes O: ``4 Lq Lk`` elements for S and P.
    "flash", one kernel: Q read once, K and V once per block of ``block_m`` queries, O
    written once. (On a GPU the L2 cache serves many of the K, V re-reads.)
    """
    dv = d if dv is None else dv
    size = int(bytes_per_element(dtype))
    if method == "naive":
        elements = lq * d + lk * d + 4 * lq * lk + lk * dv + lq * dv
    elif method == "flash":
        elements = lq * d + math.ceil(lq / block_m) * lk * (d + dv) + lq * dv
    else:
        raise ValueError(f"method must be 'naive' or 'flash', got {method!r}")
    return batch * elements * size


def peak_traced_bytes(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, int]:
    """Run ``fn(*args, **kwargs)``; return its result and the peak of the memory allocated
    during the call, in bytes, as ``tracemalloc`` sees it (Python objects and NumPy arrays,
    which report their buffers to tracemalloc; torch tensors are not seen)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = fn(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, max(0, peak - base)


# --- 7. benchmarks ----------------------------------------------------------------------------

def _bench_memory(args: argparse.Namespace):
    """The CPU half: peak NumPy memory of naive and tiled attention against L."""
    from .bench import Table, time_cpu

    table = Table(f"attention memory in NumPy: one head, d={args.head_dim}, float32, flash block {args.block}")
    rng = np.random.default_rng(0)
    naive_mib, flash_mib = [], []
    for n in args.lengths:
        q, k, v = (rng.standard_normal((n, args.head_dim)).astype(np.float32) for _ in range(3))
        ref, naive_peak = peak_traced_bytes(scaled_dot_product_attention, q, k, v, causal=args.causal)
        out, flash_peak = peak_traced_bytes(flash_attention, q, k, v, args.block, causal=args.causal)
        err = float(np.max(np.abs(out - ref)))
        for method, peak, fn in (("naive", naive_peak, scaled_dot_product_attention), ("flash", flash_peak, flash_attention)):
            extra = (args.block,) if method == "flash" else ()
            t = time_cpu(lambda: fn(q, k, v, *extra, causal=args.causal), warmup=0, min_runs=3, max_runs=3,
                         what=f"{method} L={n}")
            model = attention_workspace_bytes(n, n, args.head_dim, method=method, block=args.block) + n * args.head_dim * 4
            table.rows.append({"L": n, "method": method, "peak MiB (traced)": peak / 2**20,
                               "model MiB (work+out)": model / 2**20, "peak / (L*d*4 B)": peak / (n * args.head_dim * 4),
                               "ms (median of 3)": t.median * 1e3, "max |flash - naive|": err if method == "flash" else None})
        naive_mib.append(naive_peak / 2**20)
        flash_mib.append(flash_peak / 2**20)
    table.notes.append("peak: tracemalloc's peak of NumPy allocations during the call, less what was allocated before. "
                       "naive holds the L x L scores (and the softmax's temporaries): it grows 4x per doubling of L; "
                       "flash holds tiles, an accumulator and the output: it grows 2x, O(L d).")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return table
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.loglog(args.lengths, naive_mib, "o-", label="naive (L x L scores)")
    ax.loglog(args.lengths, flash_mib, "s-", label=f"flash, block {args.block}")
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("peak memory (MiB)")
    ax.set_title("attention memory, NumPy, one head")
    ax.legend()
    table.figures["attention_memory"] = fig
    return table


def _bench_gpu(args: argparse.Namespace):
    """The GPU half: TFLOP/s of SDPA, the tuned and plain Triton kernels and naive attention."""
    import torch
    import torch.nn.functional as F

    from . import hardware
    from .bench import Table, check_plausible, time_cuda

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    spec = hardware.detect()
    peak = hardware.peak_flops(spec, args.dtype) if spec else 0.0
    b, h, d = args.batch, args.heads, args.head_dim
    table = Table(f"attention forward on {spec.name if spec else 'cuda'}: batch {b}, {h} heads, head dim {d}, "
                  f"{args.dtype}, {'causal' if args.causal else 'not causal'}")
    methods = {
        "torch SDPA": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=args.causal),
        "flash_attention_triton": lambda q, k, v: flash_attention_triton(q, k, v, causal=args.causal),
        "flash_attention_triton_plain": lambda q, k, v: flash_attention_triton_plain(q, k, v, causal=args.causal),
        "naive (3 kernels)": lambda q, k, v: naive_attention_torch(q, k, v, causal=args.causal),
    }
    series: dict[str, list[tuple[int, float]]] = {name: [] for name in methods}
    free = torch.cuda.mem_get_info()[0]
    for n in args.lengths:
        g = torch.Generator(device="cuda").manual_seed(n)
        q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g) for _ in range(3))
        flops = attention_flops(n, n, d, batch=b * h, causal=args.causal)
        ref = F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
        sdpa_time = None
        for name, fn in methods.items():
            if name.startswith("naive") and 3 * b * h * n * n * q.element_size() > 0.6 * free:
                table.notes.append(f"naive skipped at L={n}: its scores need {b * h * n * n * q.element_size() / 2**30:.1f} GiB")
                continue
            fn(q, k, v)                                            # compile and autotune outside the figures
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            out = fn(q, k, v)
            torch.cuda.synchronize()
            extra = torch.cuda.max_memory_allocated() - base       # the output and any workspace
            err = float((out.float() - ref.float()).abs().max())
            del out
            m = time_cuda(lambda: fn(q, k, v), budget_s=args.budget, what=f"{name} L={n}")
            rate = flops / m.median
            if peak:
                check_plausible(rate, peak, what=f"{name} at L={n}")
            sdpa_time = m.median if name == "torch SDPA" else sdpa_time
            series[name].append((n, rate / 1e12))
            table.rows.append({"L": n, "method": name, "ms": m.median * 1e3, "TFLOP/s": rate / 1e12,
                               "vs SDPA": sdpa_time / m.median if sdpa_time else None,
                               "% of peak": 100 * rate / peak if peak else None,
                               "extra GiB": extra / 2**30, "max |err| vs SDPA": err})
        del q, k, v, ref
        torch.cuda.empty_cache()
    table.notes.append("FLOPs: 4 * batch * heads * L^2 * d (the two products; causal counts visible pairs only). "
                       "Times: median of CUDA-event runs with the L2 flushed (gpudl.bench.time_cuda). "
                       "extra GiB: peak memory allocated by one call (output and workspace) beyond q, k, v.")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return table
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for name, pts in series.items():
        if pts:
            ax.plot(*zip(*pts), "o-", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("TFLOP/s")
    ax.set_title(table.title, fontsize=8)
    ax.legend(fontsize=8)
    table.figures["attention_tflops"] = fig
    return table


def _bench_attention(argv: list[str]):
    """Attention: Triton flash vs torch SDPA vs naive TFLOP/s (GPU); naive vs tiled memory (CPU)."""
    from .hardware import device

    p = argparse.ArgumentParser(prog="gpudl bench attention", description=_bench_attention.__doc__)
    p.add_argument("--quick", action="store_true", help="fewer lengths and a shorter time budget")
    p.add_argument("--lengths", type=int, nargs="+", help="sequence lengths")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--dtype", choices=("fp16", "bf16", "fp32"), default="fp16")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--block", type=int, default=64, help="tile of the NumPy flash attention")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timing per measurement (GPU)")
    p.add_argument("--memory", action="store_true", help="the NumPy memory table, also on a GPU machine")
    args = p.parse_args(argv)
    on_gpu = device() == "cuda" and not args.memory
    if args.lengths is None:
        if on_gpu:
            args.lengths = [1024, 4096] if args.quick else [512, 1024, 2048, 4096, 8192, 16384]
        else:
            args.lengths = [1024, 4096] if args.quick else [256, 512, 1024, 2048, 4096]
    if args.quick:
        args.budget = min(args.budget, 0.3)
    if on_gpu:
        return _bench_gpu(args)
    table = _bench_memory(args)
    if device() != "cuda":
        table.notes.append("No GPU here: the TFLOP/s rows (Triton flash vs torch SDPA vs naive) appear on a CUDA device.")
    return table


BENCHMARKS = {"attention": _bench_attention}
