"""cuDNN's vocabulary: the enums, the errors and the three descriptors.

cuDNN describes the input and output with *tensor descriptors* (dtype, dims, strides), the
weights with a *filter descriptor* (dtype, format, K, C, R, S) and the operation with a
*convolution descriptor* (pads, strides, dilations, mode, compute type, groups, math type).
Dims are always logical, (N, C, H, W) and (K, C/groups, R, S); strides say how they are stored.

The descriptors are plain frozen values: what they imply (the output's dims, the workspace an
algorithm needs) is lab 05's work.

Public names, in order: ``Mode``, ``Algo``, ``Status``, ``MathType``, ``ConvError``,
``NotSupportedError``, ``TensorDescriptor``, ``FilterDescriptor``, ``ConvolutionDescriptor``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

import torch

from .. import layout
from ..hardware import bytes_per_element, normalize_dtype


class Mode(str, Enum):
    """``CROSS_CORRELATION`` slides the filter as stored; ``CONVOLUTION`` flips it first."""
    CONVOLUTION = "CONVOLUTION"
    CROSS_CORRELATION = "CROSS_CORRELATION"


class Algo(str, Enum):
    """Forward algorithms (cuDNN's ``CUDNN_CONVOLUTION_FWD_ALGO_*``; GEMM is im2col + GEMM)."""
    DIRECT = "DIRECT"
    GEMM = "GEMM"
    IMPLICIT_GEMM = "IMPLICIT_GEMM"
    FFT = "FFT"
    WINOGRAD = "WINOGRAD"


class Status(str, Enum):
    """What find reports per algorithm (cuDNN's ``cudnnStatus_t``)."""
    SUCCESS = "SUCCESS"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    ALLOC_FAILED = "ALLOC_FAILED"


class MathType(str, Enum):
    """``DEFAULT_MATH`` keeps FP32 math in FP32; ``TENSOR_OP_MATH`` lets FP32 GEMMs use
    tensor cores in TF32 (on a GPU); ``FMA_MATH`` forbids tensor cores."""
    DEFAULT_MATH = "DEFAULT_MATH"
    TENSOR_OP_MATH = "TENSOR_OP_MATH"
    FMA_MATH = "FMA_MATH"


class ConvError(ValueError):
    """An impossible configuration (cuDNN's ``CUDNN_STATUS_BAD_PARAM``)."""


class NotSupportedError(ConvError):
    """A valid configuration this algorithm cannot compute (``CUDNN_STATUS_NOT_SUPPORTED``)."""


def _enum(kind: type[Enum], value: Any, aliases: dict[str, str] | None = None) -> Any:
    if isinstance(value, kind):
        return value
    text = str(value).strip().upper()
    text = (aliases or {}).get(text, text)
    for prefix in ("CUDNN_CONVOLUTION_FWD_ALGO_", "CUDNN_STATUS_", "CUDNN_"):
        text = text.removeprefix(prefix)
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"unknown {kind.__name__} {value!r}; choose from {[m.value for m in kind]}") from None


def _algo(a: Any) -> Algo:
    return _enum(Algo, a, {"IM2COL": "GEMM", "IM2COL_GEMM": "GEMM"})


def _pair(name: str, value: Any, minimum: int) -> tuple[int, int]:
    pair = (value, value) if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(pair) != 2 or any(isinstance(v, bool) or not isinstance(v, int) for v in pair):
        raise ConvError(f"{name} must be an int or a pair of ints (height, width), got {value!r}")
    if any(v < minimum for v in pair):
        raise ConvError(f"{name} must be >= {minimum}, got {pair}")
    return pair


# --- descriptors ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TensorDescriptor:
    """cuDNN's n-D tensor descriptor: a dtype, ``dims`` in logical order (N, C, then the
    spatial dims) and one stride per dim (default: packed, row-major = NCHW). nbDims is 3..8.
    ``from_tensor`` describes a torch tensor as it is stored (NHWC for ``channels_last``)."""

    dtype: str
    dims: tuple[int, ...]
    strides: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        dims = tuple(self.dims)
        if not 3 <= len(dims) <= 8:
            raise ConvError(f"a tensor descriptor has 3 to 8 dims (cuDNN's nbDims), got {len(dims)}: {dims}"
                            + ("; a 2-D matrix is described as (N, C, 1)" if len(dims) == 2 else ""))
        try:
            if self.strides is None:      # packed, the last dim fastest (cudnnSetTensor4dDescriptor's NCHW)
                layout.Layout(dims, (0,) * len(dims))                   # the dims checked first
                strides = tuple(math.prod(dims[i + 1:]) for i in range(len(dims)))
            else:
                strides = tuple(self.strides)
            lay = layout.Layout(dims, strides)
        except (TypeError, ValueError) as exc:
            raise ConvError(f"bad tensor descriptor: {exc}") from None
        object.__setattr__(self, "dims", lay.shape)
        object.__setattr__(self, "strides", lay.stride)

    @classmethod
    def from_tensor(cls, t: torch.Tensor) -> "TensorDescriptor":
        return cls(t.dtype, tuple(t.shape), tuple(t.stride()))

    @property
    def nb_dims(self) -> int:
        return len(self.dims)

    @property
    def layout(self) -> layout.Layout:
        return layout.Layout(self.dims, self.strides)

    @property
    def format(self) -> str | None:
        """The format letters (dims by decreasing stride), for 3 to 5 dims."""
        return layout.format_of(self.layout) if self.nb_dims in layout.LOGICAL else None

    @property
    def nbytes(self) -> int:
        """Bytes of memory the descriptor spans (gaps included)."""
        return self.layout.cosize * int(bytes_per_element(self.dtype))


_FILTER_FORMATS = ("NCHW", "NHWC")


@dataclass(frozen=True)
class FilterDescriptor:
    """cuDNN's filter descriptor: K filters of C channels (per group), R x S each, stored
    NCHW (that is KCRS) or NHWC (KRSC)."""

    dtype: str
    format: str
    k: int
    c: int
    r: int
    s: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        fmt = str(self.format).upper()
        if fmt not in _FILTER_FORMATS:
            raise ConvError(f"filter format must be one of {_FILTER_FORMATS} (KCRS or KRSC), got {self.format!r}")
        object.__setattr__(self, "format", fmt)
        for name in ("k", "c", "r", "s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConvError(f"filter {name.upper()} must be a positive int, got {v!r}")

    @classmethod
    def from_tensor(cls, w: torch.Tensor) -> "FilterDescriptor":
        if w.dim() != 4:
            raise ConvError(f"filters are 4-D (K, C/groups, R, S), got shape {tuple(w.shape)}")
        for fmt, memory_format in zip(_FILTER_FORMATS, (torch.contiguous_format, torch.channels_last)):
            if w.is_contiguous(memory_format=memory_format):
                return cls(w.dtype, fmt, *w.shape)
        raise ConvError(f"filter strides {tuple(w.stride())} for shape {tuple(w.shape)} are neither packed NCHW nor "
                        "NHWC: call .contiguous() (or .contiguous(memory_format=torch.channels_last))")

    @property
    def dims(self) -> tuple[int, int, int, int]:
        return (self.k, self.c, self.r, self.s)


@dataclass(frozen=True)
class ConvolutionDescriptor:
    """``cudnnSetConvolution2dDescriptor`` plus groups and math type. ``pad``, ``stride`` and
    ``dilation`` take an int or a (height, width) pair."""

    pad: Any = 0
    stride: Any = 1
    dilation: Any = 1
    mode: Mode = Mode.CROSS_CORRELATION
    compute_type: str = "fp32"
    groups: int = 1
    math_type: MathType = MathType.DEFAULT_MATH

    def __post_init__(self) -> None:
        object.__setattr__(self, "pad", _pair("pad", self.pad, 0))
        object.__setattr__(self, "stride", _pair("stride", self.stride, 1))
        object.__setattr__(self, "dilation", _pair("dilation", self.dilation, 1))
        object.__setattr__(self, "mode", _enum(Mode, self.mode))
        object.__setattr__(self, "math_type", _enum(MathType, self.math_type))
        object.__setattr__(self, "compute_type", normalize_dtype(self.compute_type))
        if isinstance(self.groups, bool) or not isinstance(self.groups, int) or self.groups < 1:
            raise ConvError(f"groups must be a positive int, got {self.groups!r}")
