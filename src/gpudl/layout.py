"""Tensor layouts: a layout is (shape, stride), a map from a coordinate to an offset.

cuDNN describes every tensor by its dims and its strides (the lecture's "Tensor Descriptor"):
the element at coordinate ``(n, c, h, w)`` lives ``n*sN + c*sC + h*sH + w*sW`` elements
after the first. A *format* such as NCHW or NHWC names the dims in memory order, outermost
first: its letters are the dims sorted by decreasing stride. The dims themselves are
always listed in the *logical* order N, C, (D,) H, W, whatever the format; cuDNN's
``cudnnSetTensor4dDescriptor(desc, format, dtype, n, c, h, w)`` and torch's memory formats
(``torch.channels_last`` is NHWC) both work this way. So a format changes the strides,
never the shape, and the same coordinate finds the same value in any format.

Two ways to change a layout:

- a *view* reinterprets the same memory with other strides (``permute``, ``as_strided``):
  nothing moves, so it is free, but the result may not be contiguous;
- a *copy* moves the data into a new buffer in the order of the new format
  (``permute(...).contiguous()``, ``x.contiguous(memory_format=torch.channels_last)``).

Computing a format's strides, an element's offset and the conversions is lab 05's work; this
module holds the vocabulary around it.

Public names, in order: ``Layout``, ``LOGICAL``, ``FORMATS``, ``format_of``, ``layout_of``,
``is_view``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

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
    """``shape`` and ``stride`` (in elements, one per dim), checked: the lecture's NCHW example
    is ``Layout((1, 64, 5, 4), (1280, 20, 4, 1))``. Which offset a coordinate maps to is lab 05's
    exercise."""

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

    def permute(self, *order: int) -> "Layout":
        """The same memory seen with the dims reordered: a view (every element keeps its offset)."""
        if len(order) == 1 and isinstance(order[0], (tuple, list)):
            order = tuple(order[0])
        order = _ints("order", order)
        if sorted(order) != list(range(self.rank)):
            raise ValueError(f"order {order} is not a permutation of 0..{self.rank - 1}")
        return Layout(tuple(self.shape[i] for i in order), tuple(self.stride[i] for i in order))

    def __str__(self) -> str:
        return f"{self.shape}:{self.stride}"


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
    if len(stride) not in LOGICAL:
        raise ValueError(f"formats are named for 3, 4 or 5 dims ({', '.join(LOGICAL.values())}); "
                         f"got {len(stride)} dims")
    logical = LOGICAL[len(stride)]
    # a size-1 dim's stride is arbitrary: rank it by the stride it would have in logical order
    key = []
    for axis, (n, d) in enumerate(zip(shape, stride)):
        key.append((-(d if n > 1 else math.prod(shape[axis + 1:])), axis))
    return "".join(logical[axis] for _, axis in sorted(key))


def layout_of(x: Any) -> Layout:
    """The layout of a torch tensor or NumPy array (strides in elements, not bytes)."""
    if hasattr(x, "stride") and callable(x.stride):           # torch
        return Layout(tuple(x.shape), tuple(x.stride()))
    arr = np.asarray(x)
    return Layout(arr.shape, tuple(s // arr.itemsize for s in arr.strides))


def is_view(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` share memory (one is a view of the other's buffer)."""
    if hasattr(a, "untyped_storage") and hasattr(b, "untyped_storage"):
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    return bool(np.shares_memory(np.asarray(a), np.asarray(b)))
