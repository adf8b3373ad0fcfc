"""Attention: the lecture's tools, from one query against a set of vectors to what attention costs.

The lectures ("Summary of Various Versions of Attention Algorithms") build attention
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
score tiles never leave on-chip memory; the working memory is O(N d). Lab 07 has the student
write these (the stable softmax, scaled dot-product attention with masks, multi-head
self-attention, the online-softmax merge, tiled attention, a Triton kernel); this package holds
what the lecture uses around them.

Masks follow torch (``causal_mask`` is the top-left triangle of ``is_causal=True``).

The package, one module per idea, in reading order:

``attention.reference``     the lecture's forms: ``dot_similarity``, ``scaled_dot_similarity``,
                            ``additive_similarity``, ``general_attention`` (with torch's softmax),
                            ``causal_mask``, ``MultiheadWeights``, ``weights_from_torch``; and
                            ``naive_attention_torch``, the three-kernel version in torch (any device)
``attention.costs``         what it costs: ``multihead_self_attention_flops``,
                            ``multihead_self_attention_params``, ``transformer_block_params``,
                            ``transformer_params``, ``ModelSize``, ``MODEL_SIZES``,
                            ``attention_workspace_bytes``, ``attention_dram_bytes``,
                            ``peak_traced_bytes`` (the peak memory of a call: tracemalloc, and
                            torch's largest storage)

Every public name is re-exported here: ``from gpudl import attention; attention.causal_mask(4)``.
"""
from __future__ import annotations

from .costs import (MODEL_SIZES, ModelSize, attention_dram_bytes, attention_workspace_bytes,
                    multihead_self_attention_flops, multihead_self_attention_params, peak_traced_bytes,
                    transformer_block_params, transformer_params)
from .reference import (MultiheadWeights, additive_similarity, causal_mask, dot_similarity, general_attention,
                        naive_attention_torch, scaled_dot_similarity, weights_from_torch)

__all__ = ["dot_similarity", "scaled_dot_similarity", "additive_similarity", "general_attention", "causal_mask",
           "MultiheadWeights", "weights_from_torch", "naive_attention_torch", "multihead_self_attention_flops",
           "multihead_self_attention_params", "transformer_block_params", "transformer_params", "ModelSize",
           "MODEL_SIZES", "attention_workspace_bytes", "attention_dram_bytes", "peak_traced_bytes"]
