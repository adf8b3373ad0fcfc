"""Attention as the lectures build it: general attention, the similarity functions, masks,
torch's multi-head weights, and the naive form in torch.

1. *General attention*: a query against input vectors with a similarity function ``f_att``,
   optionally with keys and values from learnable weights, ``K = X W_K`` and ``V = X W_V``:
   ``Y = softmax(Q K^T / sqrt(D_Q)) V``, two GEMMs around a row-wise softmax (torch's).
2. *Masks* follow torch: a boolean mask is True where a query may attend to a key, and a causal
   mask lets query ``i`` attend to keys ``j <= i`` (aligned at the top left, like
   ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``).
3. *Multi-head self-attention* in torch's layout: ``weights_from_torch`` reads a
   ``torch.nn.MultiheadAttention``'s weights in the lecture's ``Q = X W_Q`` convention.

The lab's exercises (the stable softmax, scaled dot-product attention with masks, multi-head
self-attention, the online softmax, tiled attention, the Triton kernel) are the student's to
write; this module holds the lecture's tools around them.

Public names, in order:

``dot_similarity``, ``scaled_dot_similarity``, ``additive_similarity``   choices of f_att
``general_attention``               one or many queries against X, optional W_K and W_V
``causal_mask``                     the top-left triangle, True where a query may attend
``MultiheadWeights``, ``weights_from_torch``   torch.nn.MultiheadAttention's weights as W_Q, W_K, W_V, W_O
``naive_attention_torch``           the three-kernel version in torch (any device)
"""
from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

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


def _blocks(block: int | Sequence[int]) -> tuple[int, int]:
    bm, bn = (block, block) if isinstance(block, (int, np.integer)) else tuple(block)
    if int(bm) < 1 or int(bn) < 1:
        raise ValueError(f"block sizes must be positive, got {block}")
    return int(bm), int(bn)


# --- 1. general attention -------------------------------------------------------------------

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
    (or ``x``); scores ``similarity(q, keys)``, weights their softmax over the inputs (torch's
    ``torch.softmax``), and the output the weighted sum of the values: (D_V,) or (N_Q, D_V).
    """
    import torch

    x = _arr(x, "x")
    if x.ndim != 2:
        raise ValueError(f"x must be (N_x, D_x), got {x.shape}")
    keys = x if w_k is None else x @ _arr(w_k, "w_k")      # (N_x, D_Q)
    values = x if w_v is None else x @ _arr(w_v, "w_v")    # (N_x, D_V)
    e = similarity(q, keys)                                 # (N_x,) or (N_Q, N_x)
    weights = torch.softmax(torch.from_numpy(np.ascontiguousarray(e)), dim=-1).numpy()
    return weights @ values


# --- 2. masks -------------------------------------------------------------------------------------

def causal_mask(lq: int, lk: int | None = None) -> np.ndarray:
    """Boolean (lq, lk), True where query i may attend to key j, i.e. j <= i (top-left aligned)."""
    lk = lq if lk is None else lk
    return np.tril(np.ones((lq, lk), dtype=bool))


# --- 3. multi-head self-attention: torch's weights ---------------------------------------------------

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
    transposed is ``w_o``: ``X W_Q`` here is torch's ``X W^T`` for the first D rows.
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
