"""Flash attention in NumPy: the online softmax, tile by tile, never the L x L score matrix.

Naive attention materialises the (N_Q, N_x) score matrix: O(N^2) memory. *Flash attention*
tiles the keys and keeps, for each query row, a running maximum ``m`` and sum ``l`` of the
softmax (the *online softmax*): when a new block of scores raises the maximum from ``m`` to
``m'``, everything accumulated so far is rescaled by ``exp(m - m')``. The result is exact; the
working memory is O(N d).

Public names, in order: ``softmax_block_state``, ``online_softmax_merge``, ``flash_attention``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..references import reference
from .reference import _arr, _blocks, _check_qkv, _default_scale

# --- the online softmax -----------------------------------------------------------------------

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
