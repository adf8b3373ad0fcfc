"""Attention as the lectures build it, the naive way: every score in memory at once (NumPy).

1. *General attention*: a query against input vectors with a similarity function ``f_att``.
2. *Keys and values* with learnable weights, and many queries at once:
   ``Y = softmax(Q K^T / sqrt(D_Q), dim=1) V``, two GEMMs around a row-wise softmax.
3. *Self-attention* (``Q = X W_Q``) and *multi-head* self-attention.

These are the references the tiled and Triton versions are checked against.

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
``naive_attention_torch``           the three-kernel version in torch (any device)
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ..references import reference

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
    """``e = q . keys_i / sqrt(D)``: the lecture's choice, so scores do not grow with D."""
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
    """The lecture's general attention layer.

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



# --- 4. the naive form on a device -----------------------------------------------------------------

def naive_attention_torch(q: Any, k: Any, v: Any, causal: bool = False, scale: float | None = None) -> Any:
    """Attention as three kernels in torch (any device): the (..., Lq, Lk) scores and their
    softmax are written to memory and read back. The baseline flash attention removes."""
    import torch

    s = (q @ k.transpose(-1, -2)) * _default_scale(q.shape[-1], scale)     # (..., Lq, Lk)
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return torch.softmax(s, dim=-1) @ v                                    # (..., Lq, dv)
