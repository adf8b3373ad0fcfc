"""2:4 fine-grained structured sparsity: at most 2 non-zeros in every group of 4.

Ampere's and Hopper's sparse tensor cores multiply a matrix A (M x K) in which every group of
4 consecutive values *along the reduction dimension K* holds at most 2 non-zeros. Such a
matrix is stored compressed: the kept values, (M, K/2), and for each one 2 bits of metadata
saying where in its group of 4 it sat, (M, K/2) indices in 0..3. The hardware reads the
metadata to pick, for each kept value, the matching row of B: half the multiplications, twice
the throughput, for the same result as the dense product of the pruned matrix.

Storage, for b-bit values (the lecture: 2 bits of metadata per kept value, "16b data => 12.5%
overhead, 8b data => 25%"): the metadata is 2/b of the kept values, and values plus metadata
are (b/2 + 1)/b of the dense matrix: 56.25% for 16-bit data, 62.5% for 8-bit.

Pruning, compressing, counting and multiplying in that format is lab 08's work; this module has
the format's constants, the test of the pattern, the compressed form as a value, torch's own
conversion to the layout CUTLASS's sparse kernels read (on a CPU too), and torch's pruning of a
model's linear layers (``torch.ao.pruning``) for fine-tuning.

Public names, in reading order:

``GROUP``, ``KEPT``, ``INDEX_BITS``, ``is_2_4``   the pattern: at most 2 non-zeros in each group of 4 along K
``Sparse24``                                 a compressed matrix: values + 2-bit indices, (M, K/2) each
``pack_metadata``, ``unpack_metadata``       the indices packed 2 bits each, 4 per byte
``compress_cutlass``, ``decompress_cutlass``  torch's conversion of a 2:4 tensor to CUTLASS's values and metadata, and back
``semi_structured``                          a 2:4 CUDA tensor through ``torch.sparse.to_sparse_semi_structured``
``prune_model_2_4``, ``apply_masks``         prune a model's linear layers and keep them pruned while fine-tuning
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

GROUP = 4          # values per group
KEPT = 2           # at most this many non-zeros per group
INDEX_BITS = 2     # metadata bits per kept value: a position 0..3


def _groups(a: np.ndarray) -> np.ndarray:
    if a.ndim < 1 or a.shape[-1] % GROUP:
        raise ValueError(f"the reduction dimension (last axis) must be a multiple of {GROUP}, got shape {a.shape}")
    return a.reshape(*a.shape[:-1], a.shape[-1] // GROUP, GROUP)          # (..., K/4, 4)


def is_2_4(a: Any) -> bool:
    """Whether every group of 4 along the last axis holds at most 2 non-zeros."""
    return bool(np.all(np.count_nonzero(_groups(np.asarray(a)), axis=-1) <= KEPT))


@dataclass(frozen=True, eq=False)
class Sparse24:
    """A 2:4-sparse (M, K) matrix, compressed: ``values`` (M, K/2), ``indices`` (M, K/2) uint8 in
    0..3, the position of each value inside its group of 4 (two per group, in increasing order)."""

    values: np.ndarray
    indices: np.ndarray

    def __post_init__(self) -> None:
        if self.values.shape != self.indices.shape or self.values.ndim != 2 or self.values.shape[1] % KEPT:
            raise ValueError(f"values and indices must be (M, K/2) with K a multiple of 4, got "
                             f"{self.values.shape} and {self.indices.shape}")
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= GROUP):
            raise ValueError("indices are positions inside a group of 4: 0..3")

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape[0], self.values.shape[1] * GROUP // KEPT


def pack_metadata(indices: Any) -> np.ndarray:
    """The 2-bit indices packed four to a byte, first index in the lowest bits: (M, K/2) -> (M, K/8)
    uint8. What the metadata costs in memory, made concrete."""
    idx = np.asarray(indices).astype(np.uint8)
    if idx.shape[-1] % 4:
        raise ValueError(f"pack groups of four indices: the last axis ({idx.shape[-1]}) must be a multiple of 4")
    q = idx.reshape(*idx.shape[:-1], -1, 4)
    return (q[..., 0] | (q[..., 1] << 2) | (q[..., 2] << 4) | (q[..., 3] << 6)).astype(np.uint8)


def unpack_metadata(packed: Any) -> np.ndarray:
    """The inverse of ``pack_metadata``."""
    p = np.asarray(packed, dtype=np.uint8)
    return np.stack([(p >> s) & 3 for s in (0, 2, 4, 6)], axis=-1).reshape(*p.shape[:-1], -1)


def compress_cutlass(a: Any) -> tuple[Any, Any]:
    """``(values, metadata)`` of a 2:4-sparse torch tensor (M, K) in the layout CUTLASS's sparse
    tensor-core kernels read, by torch's own conversion (it runs on a CPU too): ``values`` (M, K/2)
    of the tensor's dtype, ``metadata`` the kept values' 2-bit positions packed into int16 words
    (int32 for int8 data) and reordered for the hardware's loads. torch asks for FP16, BF16 or int8
    data (FP32 it takes as 1:2-sparse), M a multiple of 32 and K a multiple of 32 (64 for int8)."""
    from torch.sparse import _semi_structured_conversions as conversions

    return conversions.sparse_semi_structured_from_dense_cutlass(a)


def decompress_cutlass(values: Any, metadata: Any) -> Any:
    """The dense tensor back from ``compress_cutlass``'s values and metadata."""
    from torch.sparse import _semi_structured_conversions as conversions

    return conversions.sparse_semi_structured_to_dense_cutlass(values, metadata)


# --- on a GPU ------------------------------------------------------------------------------

def semi_structured(a: Any) -> tuple[Any, str]:
    """``(torch.sparse.to_sparse_semi_structured(a), "")`` for a 2:4 CUDA tensor, or ``(None, why)``
    when this GPU or torch build cannot (no CUDA, compute capability below 8.0, a dtype or shape
    it refuses): the reason is torch's own message."""
    import torch

    if not isinstance(a, torch.Tensor) or a.device.type != "cuda":
        return None, "2:4 semi-structured sparsity needs a CUDA tensor (sparse tensor cores); this runs on the CPU"
    major, minor = torch.cuda.get_device_capability(a.device)
    if major < 8:
        return None, f"compute capability {major}.{minor}: sparse tensor cores start with Ampere (8.0)"
    try:
        from torch.sparse import to_sparse_semi_structured
        return to_sparse_semi_structured(a), ""
    except Exception as exc:  # noqa: BLE001 - any refusal is reported, not raised
        return None, f"{type(exc).__name__}: {exc}"


def prune_model_2_4(model: Any) -> dict[str, Any]:
    """Prune every ``torch.nn.Linear`` weight of ``model`` to 2:4 along its input dimension (the
    reduction of ``x @ W.T``) by magnitude, in place, with torch's ``WeightNormSparsifier`` (blocks
    of 1 x 4, 2 zeros each: the 2 smallest |w| of each group); returns the masks by parameter name."""
    import torch
    from torch.ao import pruning

    names = [name for name, module in model.named_modules()
             if isinstance(module, torch.nn.Linear) and module.in_features % GROUP == 0]
    if not names:
        return {}
    sparsifier = pruning.WeightNormSparsifier(sparsity_level=1.0, sparse_block_shape=(1, GROUP),
                                              zeros_per_block=GROUP - KEPT)
    sparsifier.prepare(model, [{"tensor_fqn": f"{name}.weight" if name else "weight"} for name in names])
    sparsifier.step()
    masks = {}
    for name in names:
        module = model.get_submodule(name)
        masks[f"{name}.weight" if name else "weight"] = module.parametrizations.weight[0].mask.detach().clone()
    sparsifier.squash_mask()              # the masks multiplied into the weights, the parametrizations gone
    return masks


def apply_masks(model: Any, masks: dict[str, Any]) -> None:
    """Zero the pruned weights again (after an optimizer step), so fine-tuning keeps the 2:4
    pattern, as NVIDIA's ASP does by masking weights and gradients."""
    import torch

    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, mask in masks.items():
            params[name].mul_(mask)
