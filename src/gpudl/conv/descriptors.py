"""cuDNN's vocabulary: the enums, the three descriptors, output dims, and what each algorithm supports.

cuDNN describes the input and output with *tensor descriptors* (dtype, dims, strides), the
weights with a *filter descriptor* (dtype, format, K, C, R, S) and the operation with a
*convolution descriptor* (pads, strides, dilations, mode, compute type, groups, math type).
Dims are always logical, (N, C, H, W) and (K, C/groups, R, S); strides say how they are stored.

Public names, in order: ``Mode``, ``Algo``, ``Status``, ``MathType``, ``ConvError``,
``NotSupportedError``, ``TensorDescriptor``, ``FilterDescriptor``, ``ConvolutionDescriptor``,
``output_size``, ``output_dims``, ``conv_flops``, ``supported``.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

import torch

from .. import layout
from ..hardware import bytes_per_element, normalize_dtype
from ..references import reference
from ..roofline import conv2d_flops


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
    spatial dims) and one stride per dim (default: packed, row-major = NCHW). nbDims is 3..8."""

    dtype: str
    dims: tuple[int, ...]
    strides: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", normalize_dtype(self.dtype))
        dims = tuple(self.dims)
        if not 3 <= len(dims) <= 8:
            raise ConvError(f"a tensor descriptor has 3 to 8 dims (cuDNN's nbDims), got {len(dims)}: {dims}"
                            + ("; a 2-D matrix is described as (N, C, 1)" if len(dims) == 2 else ""))
        strides = layout.row_major_strides(dims) if self.strides is None else tuple(self.strides)
        try:
            lay = layout.Layout(dims, strides)
        except (TypeError, ValueError) as exc:
            raise ConvError(f"bad tensor descriptor: {exc}") from None
        object.__setattr__(self, "dims", lay.shape)
        object.__setattr__(self, "strides", lay.stride)

    @classmethod
    def from_format(cls, fmt: str, dtype: Any, dims: Sequence[int]) -> "TensorDescriptor":
        """Like ``cudnnSetTensor4dDescriptor(desc, format, dtype, n, c, h, w)``: dims in logical
        order, strides from the format (NCHW, NHWC, CHWN, NCDHW, NDHWC, CDHWN)."""
        return cls(dtype, tuple(dims), layout.format_strides(dims, fmt))

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
        lay = layout.layout_of(w)
        for fmt in _FILTER_FORMATS:
            if lay.stride == layout.format_strides(lay.shape, fmt) or (
                    lay.is_compact() and layout.format_of(lay) == fmt):
                return cls(w.dtype, fmt, *lay.shape)
        raise ConvError(f"filter strides {lay.stride} for shape {lay.shape} are neither packed NCHW nor NHWC: "
                        "call .contiguous() (or .contiguous(memory_format=torch.channels_last))")

    @property
    def dims(self) -> tuple[int, int, int, int]:
        return (self.k, self.c, self.r, self.s)

    @property
    def strides(self) -> tuple[int, ...]:
        return layout.format_strides(self.dims, self.format)


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


# --- output dims -----------------------------------------------------------------------------

@reference
def output_size(h: int, r: int, pad: int, stride: int, dilation: int = 1) -> int:
    """cuDNN's formula for one spatial dim: ``1 + (h + 2*pad - ((r - 1)*dilation + 1)) // stride``.

    >>> output_size(128, 3, 1, 1)
    128
    """
    span = (r - 1) * dilation + 1                      # the dilated filter's extent
    if h + 2 * pad < span:
        raise ConvError(f"the filter spans {span} positions ((R-1)*dilation + 1 with R={r}, dilation={dilation}) "
                        f"but the padded input has only {h} + 2*{pad} = {h + 2 * pad}: the output would be empty")
    return 1 + (h + 2 * pad - span) // stride


@reference
def output_dims(x_desc: TensorDescriptor, w_desc: FilterDescriptor,
                conv_desc: ConvolutionDescriptor) -> tuple[int, int, int, int]:
    """(N, K, P, Q) of the output, like ``cudnnGetConvolution2dForwardOutputDim``; raises
    ``ConvError`` with the reason for an impossible configuration."""
    if x_desc.nb_dims != 4:
        raise ConvError(f"2-D convolution takes a 4-D input (N, C, H, W), got dims {x_desc.dims}")
    n, c, h, w = x_desc.dims
    g = conv_desc.groups
    if c % g:
        raise ConvError(f"groups={g} does not divide the input's C={c} channels")
    if w_desc.k % g:
        raise ConvError(f"groups={g} does not divide the filter's K={w_desc.k} output channels")
    if w_desc.c * g != c:
        raise ConvError(f"the filter has C={w_desc.c} channels per group x groups={g} = {w_desc.c * g}, "
                        f"but the input has C={c}" + (": the filter's C is per group (C / groups)"
                                                      if w_desc.c == c and g > 1 else ""))
    if w_desc.dtype != x_desc.dtype:
        raise ConvError(f"input is {x_desc.dtype} but the filter is {w_desc.dtype}")
    (ph, pw), (u, v), (dh, dw) = conv_desc.pad, conv_desc.stride, conv_desc.dilation
    return n, w_desc.k, output_size(h, w_desc.r, ph, u, dh), output_size(w, w_desc.s, pw, v, dw)


def conv_flops(x_desc: TensorDescriptor, w_desc: FilterDescriptor, conv_desc: ConvolutionDescriptor) -> int:
    """FLOPs of the convolution as defined (2 per multiply-add), whatever the algorithm."""
    out = output_dims(x_desc, w_desc, conv_desc)
    return conv2d_flops(x_desc.dims, out, (w_desc.r, w_desc.s), groups=conv_desc.groups)



# --- what each algorithm supports ------------------------------------------------------------

def _support(algo: Algo, cd: ConvolutionDescriptor, rs: tuple[int, int]) -> tuple[Status, str]:
    if algo is Algo.FFT and cd.stride != (1, 1):
        return Status.NOT_SUPPORTED, f"FFT needs stride 1, got stride {cd.stride}"
    if algo is Algo.WINOGRAD:
        if tuple(rs) != (3, 3):
            return Status.NOT_SUPPORTED, f"Winograd F(2x2, 3x3) needs a 3x3 filter, got {rs[0]}x{rs[1]}"
        if cd.stride != (1, 1):
            return Status.NOT_SUPPORTED, f"Winograd F(2x2, 3x3) needs stride 1, got {cd.stride}"
        if cd.dilation != (1, 1):
            return Status.NOT_SUPPORTED, f"Winograd F(2x2, 3x3) needs dilation 1, got {cd.dilation}"
    return Status.SUCCESS, ""


def supported(algo: Any, x_desc: TensorDescriptor, w_desc: FilterDescriptor,
              conv_desc: ConvolutionDescriptor) -> tuple[Status, str]:
    """(SUCCESS, "") when ``algo`` can compute this convolution, else (NOT_SUPPORTED, why).
    Impossible configurations raise ``ConvError`` instead."""
    output_dims(x_desc, w_desc, conv_desc)
    return _support(_algo(algo), conv_desc, (w_desc.r, w_desc.s))
