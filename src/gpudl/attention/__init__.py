"""Attention: from one query against a set of vectors to a tiled flash-attention kernel.

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
score tiles never leave on-chip memory; the working memory is O(N d).

Masks follow torch (``gpudl.attention.reference`` says how, and what a row that may attend to
no key gets: zeros).

The package, one module per idea, in reading order:

``attention.reference``     the reference forms (NumPy): ``softmax``, ``dot_similarity``,
                            ``scaled_dot_similarity``, ``additive_similarity``, ``general_attention``,
                            ``causal_mask``, ``scaled_dot_product_attention``, ``split_heads``,
                            ``merge_heads``, ``multihead_self_attention``, ``MultiheadWeights``,
                            ``weights_from_torch``; and ``naive_attention_torch``, the three-kernel
                            version in torch (any device)
``attention.tiled``         the online softmax, tiled, in NumPy: ``softmax_block_state``,
                            ``online_softmax_merge``, ``flash_attention`` (never holds the N x N matrix)
``attention.triton_plain``  a readable Triton forward, one loop, every mask: ``attention_plain_kernel``,
                            ``flash_attention_triton_plain``
``attention.triton_tuned``  the tuned Triton forward (exp2 with log2(e) in the scale, autotuned
                            tiles, causal split into off-diagonal and diagonal blocks, little host
                            work per call): ``LOG2_E``, ``attention_tuned_kernel``, ``flash_attention_triton``
``attention.costs``         what it costs: ``attention_flops``, ``multihead_self_attention_flops``,
                            ``multihead_self_attention_params``, ``transformer_block_params``,
                            ``transformer_params``, ``ModelSize``, ``MODEL_SIZES``,
                            ``attention_workspace_bytes``, ``attention_dram_bytes``,
                            ``peak_traced_bytes`` (the peak NumPy memory of a call, by tracemalloc)

Every public name is re-exported here: ``from gpudl import attention; attention.flash_attention(...)``.
``gpudl bench attention`` is ``gpudl.benchmarks.attention``.
"""
from __future__ import annotations

from typing import Any

from .costs import (MODEL_SIZES, ModelSize, attention_dram_bytes, attention_flops, attention_workspace_bytes,
                    multihead_self_attention_flops, multihead_self_attention_params, peak_traced_bytes,
                    transformer_block_params, transformer_params)
from .reference import (MultiheadWeights, additive_similarity, causal_mask, dot_similarity, general_attention,
                        merge_heads, multihead_self_attention, naive_attention_torch, scaled_dot_product_attention,
                        scaled_dot_similarity, softmax, split_heads, weights_from_torch)
from .tiled import flash_attention, online_softmax_merge, softmax_block_state
from .triton_plain import flash_attention_triton_plain, triton
from .triton_tuned import LOG2_E, flash_attention_triton

if triton is not None:
    from .triton_plain import attention_plain_kernel
    from .triton_tuned import attention_tuned_kernel

__all__ = ["softmax", "dot_similarity", "scaled_dot_similarity", "additive_similarity", "general_attention",
           "causal_mask", "scaled_dot_product_attention", "split_heads", "merge_heads", "multihead_self_attention",
           "MultiheadWeights", "weights_from_torch", "naive_attention_torch", "softmax_block_state",
           "online_softmax_merge", "flash_attention", "flash_attention_triton_plain", "LOG2_E",
           "flash_attention_triton", "attention_flops", "multihead_self_attention_flops",
           "multihead_self_attention_params", "transformer_block_params", "transformer_params", "ModelSize",
           "MODEL_SIZES", "attention_workspace_bytes", "attention_dram_bytes", "peak_traced_bytes"]
if triton is not None:
    __all__ += ["attention_plain_kernel", "attention_tuned_kernel"]


def __getattr__(name: str) -> Any:
    # ``attention.BENCHMARKS["attention"](argv)``, the spelling course/07_attention.ipynb's GPU cell
    # uses, from before the benchmarks moved to gpudl.benchmarks. Looked up only when asked for,
    # so this package never imports the benchmark (which imports it).
    if name == "BENCHMARKS":
        from .. import benchmarks

        return {"attention": lambda argv=(): benchmarks.run("attention", argv)}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
