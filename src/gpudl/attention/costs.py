"""What attention costs: FLOPs, parameters, working memory and DRAM traffic, and a memory probe.

Public names, in order:

``multihead_self_attention_flops``  FLOPs of multi-head self-attention's matrix products
``multihead_self_attention_params``, ``transformer_block_params``, ``transformer_params``,
``ModelSize``, ``MODEL_SIZES``      parameter counts, and the lecture's table of model sizes
``attention_workspace_bytes``, ``attention_dram_bytes``   memory and DRAM traffic models
``peak_traced_bytes``               measure the peak memory of a call (tracemalloc, and torch's
                                    largest storage)
"""
from __future__ import annotations

import math
import tracemalloc
from typing import Any, Callable, NamedTuple, Sequence

from ..hardware import bytes_per_element
from .reference import _blocks


def multihead_self_attention_flops(n: int, d_model: int, heads: int, *, batch: int = 1) -> int:
    """FLOPs of multi-head self-attention (no mask) on ``batch`` sequences of ``n`` tokens, 2 per
    multiply-add: four projections (Q, K, V, O), ``4 x 2 n D^2``, plus the heads' ``Q K^T`` and
    ``A V``, ``4 n^2 D`` together (the softmax left out, as torch's FLOP counter does)."""
    if d_model % heads:
        raise ValueError(f"heads={heads} must divide d_model={d_model}")
    if min(n, d_model, heads, batch) < 1:
        raise ValueError(f"sizes must be positive, got n={n}, d_model={d_model}, heads={heads}, batch={batch}")
    projections = 4 * 2 * batch * n * d_model * d_model
    products = 2 * 2 * batch * n * n * d_model          # Q K^T and A V of every head: the heads span D columns
    return projections + products


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
    params: float        # as quoted in the lecture


# The lecture's table ("Scaling to bigger and larger transformer blocks").
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
    during the call, in bytes: the peak ``tracemalloc`` sees (Python objects and NumPy arrays,
    which report their buffers to it), or the largest storage a torch function returned during the
    call (torch's allocator does not report to tracemalloc), whichever is larger."""
    from ..grading.forbidden import torch_outputs    # the guard's mode, where one watches torch

    largest = [0]                       # the largest storage a torch function returned

    def note(tensor: Any) -> None:
        largest[0] = max(largest[0], tensor.untyped_storage().nbytes())

    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        with torch_outputs(note):
            base, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            result = fn(*args, **kwargs)
            _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, max(0, peak - base, largest[0])
