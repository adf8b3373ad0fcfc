"""Tensor layouts: a layout is (shape, stride), a map from a coordinate to an offset.

cuDNN describes every tensor by its dims and its strides (the lecture's "Tensor Descriptor"):
the element at coordinate ``(n, c, h, w)`` lives ``n*sN + c*sC + h*sH + w*sW`` elements
after the first. A *format* such as NCHW or NHWC names the dims in memory order, outermost
first: its letters are the dims sorted by decreasing stride. The dims themselves are
always listed in the *logical* order N, C, (D,) H, W, whatever the format; cuDNN's
``cudnnSetTensor4dDescriptor(desc, format, dtype, n, c, h, w)`` and torch's memory formats
(``torch.channels_last`` is NHWC) both work this way. So a format changes the strides,
never the shape, and the same coordinate finds the same value in any format.

The lecture's example, NCHW with N=1, C=64, H=5, W=4: strides (1280, 20, 4, 1), so channel 1
starts at offset 20, channel 32 at 640, and channel 63 ends at 1279.

Two ways to change a layout:

- a *view* reinterprets the same memory with other strides (``permute``, ``as_strided``):
  nothing moves, so it is free, but the result may not be contiguous;
- a *copy* moves the data into a new buffer in the order of the new format
  (``permute(...).contiguous()``, ``x.contiguous(memory_format=torch.channels_last)``).

Public names, in order: ``Layout``, ``LOGICAL``, ``FORMATS``, ``row_major_strides``,
``permutation_strides``, ``format_strides``, ``format_layout``, ``format_of``, ``offset``,
``layout_of``, ``nchw_to_nhwc``, ``nhwc_to_nchw``, ``convert``, ``to_format``, ``is_view``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .references import reference

# The logical order of the dims, by number of dims (cuDNN's nbDims is 3 to 8; formats
# with letters exist for 3, 4 and 5).
LOGICAL = {3: "NCW", 4: "NCHW", 5: "NCDHW"}
# The formats the lecture lists (4-D: NCHW, NHWC, CHWN; 5-D: NCDHW, NDHWC, CDHWN), and the 3-D pair.
FORMATS = ("NCW", "NWC", "NCHW", "NHWC", "CHWN", "NCDHW", "NDHWC", "CDHWN")


def _ints(name: str, values: Any) -> tuple[int, ...]:
    try:
        out = tuple(values)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of integers, got {values!r}") from None
    for v in out:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must hold integers, got {v!r} in {out!r}")
    return tuple(int(v) for v in out)


@dataclass(frozen=True)
class Layout:
    """``shape`` and ``stride`` (in elements, one per dim); calling it maps a coordinate
    to an offset: ``Layout((1, 64, 5, 4), (1280, 20, 4, 1))(0, 32, 0, 0) == 640``."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def __post_init__(self) -> None:
        shape, stride = _ints("shape", self.shape), _ints("stride", self.stride)
        if not shape:
            raise ValueError("a layout needs at least one dim")
        if len(shape) != len(stride):
            raise ValueError(f"shape {shape} has {len(shape)} dims but stride {stride} has {len(stride)}: "
                             "give one stride per dim")
        if any(s <= 0 for s in shape):
            raise ValueError(f"every dim must be at least 1, got shape {shape}")
        if any(d < 0 for d in stride):
            raise ValueError(f"strides must be >= 0, got {stride}: negative strides (mirroring) are "
                             "allowed by cuDNN's descriptor but not by its routines, nor here")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """How many coordinates (elements) the layout has."""
        return math.prod(self.shape)

    @property
    def cosize(self) -> int:
        """How many elements of memory it spans: the largest offset plus one."""
        return 1 + sum((n - 1) * d for n, d in zip(self.shape, self.stride))

    def __call__(self, *coord: int) -> int:
        """The offset of ``coord`` (one index per dim)."""
        if len(coord) == 1 and isinstance(coord[0], (tuple, list)):
            coord = tuple(coord[0])
        coord = _ints("coordinate", coord)
        if len(coord) != self.rank:
            raise ValueError(f"coordinate {coord} has {len(coord)} indices, the layout has {self.rank} dims")
        for i, (x, n) in enumerate(zip(coord, self.shape)):
            if not 0 <= x < n:
                raise IndexError(f"index {x} of dim {i} is out of range for size {n} (indices run 0..{n - 1})")
        return offset(coord, self.stride)

    def offsets(self) -> np.ndarray:
        """Every coordinate's offset, as an int64 array of shape ``shape``."""
        out = np.zeros(self.shape, dtype=np.int64)
        for axis, (n, d) in enumerate(zip(self.shape, self.stride)):
            index_shape = [1] * self.rank
            index_shape[axis] = n
            out += (np.arange(n, dtype=np.int64) * d).reshape(index_shape)
        return out

    def is_non_overlapping(self) -> bool:
        """True when no two coordinates can share an offset, by the rule torch and cuDNN use:
        sorted by stride, each dim's stride reaches past everything the smaller dims span.
        (A layout that fails the rule may still be injective in odd cases; outputs must pass it.)"""
        span = 0
        for n, d in sorted(((n, d) for n, d in zip(self.shape, self.stride) if n > 1), key=lambda t: t[1]):
            if d <= span:
                return False
            span += (n - 1) * d
        return True

    def is_compact(self) -> bool:
        """True when the layout is a bijection onto offsets 0..size-1 (dense, no gaps, no overlap)."""
        return self.is_non_overlapping() and self.cosize == self.size

    def is_row_major(self) -> bool:
        """True for the contiguous (C-order) layout of its shape, size-1 dims aside."""
        return all(d == e for n, d, e in zip(self.shape, self.stride, row_major_strides(self.shape)) if n > 1)

    def permute(self, *order: int) -> "Layout":
        """The same memory seen with the dims reordered: a view (every element keeps its offset)."""
        if len(order) == 1 and isinstance(order[0], (tuple, list)):
            order = tuple(order[0])
        order = _ints("order", order)
        if sorted(order) != list(range(self.rank)):
            raise ValueError(f"order {order} is not a permutation of 0..{self.rank - 1}")
        return Layout(tuple(self.shape[i] for i in order), tuple(self.stride[i] for i in order))

    def coordinate(self, off: int) -> tuple[int, ...]:
        """The coordinate stored at offset ``off``, for a compact layout (the inverse map)."""
        if not self.is_compact():
            raise ValueError(f"{self} is not compact: an offset may hold no element or several")
        if not 0 <= off < self.size:
            raise IndexError(f"offset {off} is outside 0..{self.size - 1}")
        coord = [0] * self.rank
        for axis in sorted(range(self.rank), key=lambda a: -self.stride[a]):
            if self.shape[axis] > 1:
                coord[axis], off = divmod(off, self.stride[axis])
        return tuple(coord)

    def __str__(self) -> str:
        return f"{self.shape}:{self.stride}"


# --- strides of formats --------------------------------------------------------------------

@reference
def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Strides of a contiguous (C-order) tensor: the last dim moves fastest."""
    shape = _ints("shape", shape)
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@reference
def permutation_strides(shape: Sequence[int], order: Sequence[int]) -> tuple[int, ...]:
    """Strides (in the order of ``shape``) of a compact tensor whose dims lie in memory in
    ``order``, outermost first: ``order=(0, 2, 3, 1)`` on an NCHW shape is NHWC."""
    shape, order = _ints("shape", shape), _ints("order", order)
    if sorted(order) != list(range(len(shape))):
        raise ValueError(f"order {order} is not a permutation of 0..{len(shape) - 1}")
    in_memory = row_major_strides([shape[i] for i in order])
    strides = [0] * len(shape)
    for position, axis in enumerate(order):
        strides[axis] = in_memory[position]
    return tuple(strides)


def _logical(rank: int) -> str:
    if rank not in LOGICAL:
        raise ValueError(f"formats are named for 3, 4 or 5 dims ({', '.join(LOGICAL.values())}); got {rank} dims: "
                         "use permutation_strides for other ranks")
    return LOGICAL[rank]


def _check_format(fmt: str, rank: int) -> str:
    logical = _logical(rank)
    if not isinstance(fmt, str):
        raise TypeError(f"a format is a string such as 'NHWC', got {fmt!r}")
    fmt = fmt.upper()
    if sorted(fmt) != sorted(logical):
        hint = ""
        if len(fmt) != rank:
            hint = f": the dims are {logical} ({rank} of them) but {fmt!r} has {len(fmt)} letters"
            if rank == 5 and len(fmt) == 4:
                hint += " (5-D formats add D: NCDHW, NDHWC, CDHWN)"
        raise ValueError(f"format {fmt!r} is not an ordering of the letters {logical}{hint}")
    return fmt


@reference
def format_strides(dims: Sequence[int], fmt: str) -> tuple[int, ...]:
    """Strides for ``dims`` given in logical order (N, C, H, W or N, C, D, H, W) when the
    tensor is stored in format ``fmt``; returned in the same logical order.

    >>> format_strides((1, 64, 5, 4), "NCHW")
    (1280, 20, 4, 1)
    >>> format_strides((1, 64, 5, 4), "NHWC")
    (1280, 1, 256, 64)
    """
    dims = _ints("dims", dims)
    fmt = _check_format(fmt, len(dims))
    logical = _logical(len(dims))
    return permutation_strides(dims, [logical.index(letter) for letter in fmt])


@reference
def format_layout(dims: Sequence[int], fmt: str) -> Layout:
    """The layout of a compact tensor of logical ``dims`` stored in ``fmt``."""
    return Layout(tuple(dims), format_strides(dims, fmt))


def format_of(layout_or_strides: Layout | Sequence[int], shape: Sequence[int] | None = None) -> str:
    """The format letters of a layout: its dims sorted by decreasing stride.

    Ties (size-1 dims make NCHW and NHWC strides coincide when C=1, say) are broken by the
    logical order, the way torch reports such a tensor as contiguous.
    """
    if isinstance(layout_or_strides, Layout):
        stride = layout_or_strides.stride
        shape = layout_or_strides.shape
    else:
        stride = _ints("strides", layout_or_strides)
        shape = _ints("shape", shape) if shape is not None else (2,) * len(stride)
    logical = _logical(len(stride))
    # a size-1 dim's stride is arbitrary: give it the stride it would have in logical order
    reference_strides = row_major_strides(shape)
    key = []
    for axis, (n, d) in enumerate(zip(shape, stride)):
        key.append((-(d if n > 1 else reference_strides[axis]), axis))
    return "".join(logical[axis] for _, axis in sorted(key))


@reference
def offset(coord: Sequence[int], strides: Sequence[int]) -> int:
    """Where ``coord`` lives: the dot product of the coordinate with the strides."""
    coord, strides = _ints("coordinate", coord), _ints("strides", strides)
    if len(coord) != len(strides):
        raise ValueError(f"coordinate {coord} has {len(coord)} indices but there are {len(strides)} strides")
    return sum(i * d for i, d in zip(coord, strides))


def layout_of(x: Any) -> Layout:
    """The layout of a torch tensor or NumPy array (strides in elements, not bytes)."""
    if hasattr(x, "stride") and callable(x.stride):           # torch
        return Layout(tuple(x.shape), tuple(x.stride()))
    arr = np.asarray(x)
    return Layout(arr.shape, tuple(s // arr.itemsize for s in arr.strides))


# --- moving data between formats -------------------------------------------------------------

def _permuted_copy(x: Any, order: Sequence[int]) -> Any:
    if hasattr(x, "permute"):                                # torch: a view, then a copy
        return x.permute(*order).contiguous()
    return np.ascontiguousarray(np.transpose(x, order))


def _check_rank(x: Any, rank: int, what: str) -> None:
    if len(x.shape) != rank:
        raise ValueError(f"expected a {rank}-D {what} array, got shape {tuple(x.shape)}")


@reference
def nchw_to_nhwc(x: Any) -> Any:
    """An array of shape (N, C, H, W) as a new contiguous array of shape (N, H, W, C)."""
    _check_rank(x, 4, "NCHW")
    return _permuted_copy(x, (0, 2, 3, 1))


@reference
def nhwc_to_nchw(x: Any) -> Any:
    """An array of shape (N, H, W, C) as a new contiguous array of shape (N, C, H, W)."""
    _check_rank(x, 4, "NHWC")
    return _permuted_copy(x, (0, 3, 1, 2))


@reference
def convert(x: Any, src: str, dst: str) -> Any:
    """An array whose axes are in the order of format ``src`` (shape (N, H, W, C) for
    "NHWC") as a new contiguous array with its axes in the order of ``dst``."""
    src, dst = src.upper(), dst.upper()
    if sorted(src) != sorted(dst) or len(set(src)) != len(src):
        raise ValueError(f"cannot convert {src!r} to {dst!r}: the formats must order the same letters")
    _check_rank(x, len(src), src)
    return _permuted_copy(x, [src.index(letter) for letter in dst])


@reference
def to_format(x: Any, fmt: str) -> Any:
    """A torch tensor with the same logical dims (and values) as ``x``, stored in ``fmt``.

    Copies unless ``x`` is already stored that way. For "NHWC" this is
    ``x.contiguous(memory_format=torch.channels_last)``; for "NDHWC" ``channels_last_3d``.
    """
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"to_format works on torch tensors (logical NCHW dims), got {type(x).__name__}")
    strides = format_strides(tuple(x.shape), fmt)
    if tuple(x.stride()) == strides:
        return x
    out = torch.empty_strided(tuple(x.shape), strides, dtype=x.dtype, device=x.device)
    out.copy_(x)
    return out


def is_view(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` share memory (one is a view of the other's buffer)."""
    if hasattr(a, "untyped_storage") and hasattr(b, "untyped_storage"):
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    return bool(np.shares_memory(np.asarray(a), np.asarray(b)))
