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

Public names, in reading order:

``mask_2_4``, ``prune_2_4``, ``is_2_4``    keep the 2 largest magnitudes of each group of 4 along K
``Sparse24``, ``compress_2_4``, ``decompress_2_4``   values + 2-bit indices, and back
``pack_metadata``, ``unpack_metadata``       the indices packed 2 bits each, 4 per byte
``SparseStorage``, ``storage_2_4``          bits of values, metadata and the dense matrix; the overheads
``sparse_matmul``                            A @ B from the compressed form of A
``semi_structured``                          the same matrix through ``torch.sparse.to_sparse_semi_structured``
``prune_model_2_4``, ``apply_masks``         prune a model's linear layers and keep them pruned while fine-tuning
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .references import reference

GROUP = 4          # values per group
KEPT = 2           # at most this many non-zeros per group
INDEX_BITS = 2     # metadata bits per kept value: a position 0..3


def _groups(a: np.ndarray) -> np.ndarray:
    if a.ndim < 1 or a.shape[-1] % GROUP:
        raise ValueError(f"the reduction dimension (last axis) must be a multiple of {GROUP}, got shape {a.shape}")
    return a.reshape(*a.shape[:-1], a.shape[-1] // GROUP, GROUP)          # (..., K/4, 4)


@reference
def mask_2_4(a: Any) -> np.ndarray:
    """Boolean mask of the same shape as ``a``: in each group of 4 consecutive values along the
    last axis (the reduction dimension of ``A @ B`` for A (M, K), and of ``x @ W.T`` for a linear
    layer's weight W (out, in)), True at the 2 of largest magnitude; ties go to the lower index."""
    a = np.asarray(a)
    g = _groups(np.abs(a))                                                # (..., K/4, 4)
    order = np.argsort(-g, axis=-1, kind="stable")                        # largest first, stable on ties
    keep = np.zeros(g.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :KEPT], True, axis=-1)
    return keep.reshape(a.shape)


@reference
def prune_2_4(a: Any) -> np.ndarray:
    """``a`` with the 2 smallest magnitudes of every group of 4 along the last axis set to zero."""
    a = np.asarray(a)
    return np.where(mask_2_4(a), a, np.zeros((), a.dtype))


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


@reference
def compress_2_4(a: Any) -> Sparse24:
    """The kept values of a 2:4-sparse matrix and their positions in their groups.

    Each group stores exactly 2 entries: its non-zeros, filled up with its first zeros when it
    has fewer than 2 (a stored zero changes nothing), in increasing position. A matrix that is
    not 2:4-sparse is refused: prune it first."""
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"compress a matrix (M, K), got shape {a.shape}")
    if not is_2_4(a):
        raise ValueError("the matrix has groups of 4 with more than 2 non-zeros: prune it to 2:4 first")
    g = _groups(a)                                                        # (M, K/4, 4)
    # non-zeros first, then zeros, each by position: the first two are the kept entries
    order = np.argsort(g == 0, axis=-1, kind="stable")[..., :KEPT]
    order = np.sort(order, axis=-1)                                       # (M, K/4, 2)
    values = np.take_along_axis(g, order, axis=-1)
    m = a.shape[0]
    return Sparse24(values.reshape(m, -1), order.reshape(m, -1).astype(np.uint8))


@reference
def decompress_2_4(values: Any, indices: Any) -> np.ndarray:
    """The dense (M, K) matrix back from ``values`` and ``indices`` (M, K/2)."""
    values, indices = np.asarray(values), np.asarray(indices).astype(np.int64)
    sp = Sparse24(values, indices)
    m, k = sp.shape
    dense = np.zeros((m, k // GROUP, GROUP), dtype=values.dtype)
    np.put_along_axis(dense, indices.reshape(m, k // GROUP, KEPT), values.reshape(m, k // GROUP, KEPT), axis=-1)
    return dense.reshape(m, k)


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


@dataclass(frozen=True)
class SparseStorage:
    """Bits of a compressed 2:4 matrix (values and metadata) next to its dense size."""

    value_bits: int        # bits of all kept values
    metadata_bits: int     # 2 bits per kept value
    dense_bits: int        # bits of the dense matrix

    @property
    def overhead(self) -> float:
        """Metadata as a fraction of the kept values (the lecture's 12.5% for 16-bit data)."""
        return self.metadata_bits / self.value_bits

    @property
    def fraction_of_dense(self) -> float:
        """Values plus metadata as a fraction of the dense matrix (56.25% for 16-bit data)."""
        return (self.value_bits + self.metadata_bits) / self.dense_bits


@reference
def storage_2_4(m: int, k: int, bits: int = 16) -> SparseStorage:
    """Storage of an (M, K) 2:4 matrix of ``bits``-bit values: M*K/2 kept values, 2 bits of
    metadata each, against M*K dense values."""
    if m < 1 or k < 1 or k % GROUP or bits < 1:
        raise ValueError(f"need M >= 1, K a positive multiple of 4 and bits >= 1, got {m}, {k}, {bits}")
    kept = m * k // GROUP * KEPT
    return SparseStorage(kept * bits, kept * INDEX_BITS, m * k * bits)


@reference
def sparse_matmul(values: Any, indices: Any, b: Any) -> np.ndarray:
    """``A @ B`` from A's compressed form: kept value ``t`` of row ``i`` multiplies row
    ``4 * (t // 2) + indices[i, t]`` of B. Half the multiplications of the dense product."""
    values, indices, b = np.asarray(values), np.asarray(indices).astype(np.int64), np.asarray(b)
    sp = Sparse24(values, indices)
    m, k = sp.shape
    if b.ndim != 2 or b.shape[0] != k:
        raise ValueError(f"B must be ({k}, N) for A of shape {(m, k)}, got {b.shape}")
    rows = GROUP * (np.arange(values.shape[1]) // KEPT)[None, :] + indices   # (M, K/2): which row of B
    out = np.zeros((m, b.shape[1]), dtype=np.result_type(values, b))
    for t in range(values.shape[1]):
        out += values[:, t, None] * b[rows[:, t], :]                    # (M, N)
    return out


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
    reduction of ``x @ W.T``) by magnitude, in place; returns the masks by parameter name."""
    import torch

    masks = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and module.in_features % GROUP == 0:
            w = module.weight
            mask = torch.from_numpy(mask_2_4(w.detach().cpu().numpy())).to(w.device)
            with torch.no_grad():
                w.mul_(mask)
            masks[f"{name}.weight" if name else "weight"] = mask
    return masks


def apply_masks(model: Any, masks: dict[str, Any]) -> None:
    """Zero the pruned weights again (after an optimizer step), so fine-tuning keeps the 2:4
    pattern, as NVIDIA's ASP does by masking weights and gradients."""
    import torch

    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, mask in masks.items():
            params[name].mul_(mask)
