"""cuDNN-like convolution: descriptors, forward algorithms and their workspaces, find, backward.

cuDNN (seed 004's walk-through, seed 003's example) describes the input and output with
tensor descriptors (dtype, dims, strides), the weights with a filter descriptor (dtype,
format, K, C, R, S) and the operation with a convolution descriptor (pads, strides,
dilations, mode, compute type, groups, math type). It offers several forward algorithms
that compute the same result and trade speed for *workspace*, scratch memory the caller
allocates; ``cudnnFindConvolutionForwardAlgorithm`` runs each and returns them ranked by
time. Seed 001's table, 128x128x128x128 FP32 NCHW on a Quadro GV100, 3x3 filters: GEMM
0.76 ms with 72 MB of workspace, IMPLICIT_GEMM 0.62 ms with none, FFT 45.3 ms with 8322 MB,
WINOGRAD 0.26 ms; for 11x11 filters Winograd is "Unsupported".

Here the same model runs on torch tensors on the CPU or the GPU. A tensor's dims are always
logical (N, C, H, W) and (K, C/groups, R, S); its strides say whether it is stored NCHW or
NHWC (``torch.channels_last``), exactly as a cuDNN descriptor does. Outputs come back in the
input's format. Every algorithm computes

    y[n, k, p, q] = sum_{c, r, s} x[n, g*C' + c, p*u - pad_h + r*dil_h, q*v - pad_w + s*dil_w] * w[k, c, r, s]

(cross-correlation; ``g = k // K'`` is k's group, C' = C/groups and K' = K/groups input and
output channels per group, positions outside the input are zero). In CONVOLUTION mode the
filter is flipped first (``w[k, c, R-1-r, S-1-s]``), which is the mathematicians' convolution;
deep-learning frameworks mean CROSS_CORRELATION when they say convolution.

The algorithms, reference first:

``conv_direct``         the definition, one output pixel at a time (the reference; slow)
``conv_im2col``         GEMM: lower the input into a (C*R*S, P*Q) matrix per image in the
                        workspace, then GEMMs (cuDNN's GEMM algorithm)
``conv_implicit_gemm``  the same GEMM without the lowered matrix: one GEMM per filter tap
                        (r, s) on a strided view of the input (IMPLICIT_GEMM, no workspace)
``conv_fft``            pointwise products of spectra (stride 1 only)
``conv_winograd``       Winograd F(2x2, 3x3): 16 multiplies per 2x2 output tile instead of
                        36 (3x3 filters, stride 1, no dilation; anything else NOT_SUPPORTED)

Public names, in order: ``Mode``, ``Algo``, ``Status``, ``MathType``, ``ConvError``,
``NotSupportedError``, ``TensorDescriptor``, ``FilterDescriptor``, ``ConvolutionDescriptor``,
``output_size``, ``output_dims``, ``conv_flops``, ``im2col``, ``col2im``, ``WINOGRAD_BT``,
``WINOGRAD_G``, ``WINOGRAD_AT``, ``winograd_1d``, ``conv_direct``, ``conv_im2col``,
``conv_implicit_gemm``, ``conv_fft``, ``conv_winograd``, ``ALGORITHMS``, ``supported``,
``workspace_size``, ``conv_forward``, ``AlgoPerf``, ``DEFAULT_FIND``, ``find_algorithms``,
``BACKWARD_ALGOS``, ``conv_backward_data``, ``conv_backward_filter``, ``forward``, ``backward``,
``SEED_GV100_3X3``, ``BENCHMARKS``.
"""
from __future__ import annotations

import argparse
import contextlib
import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterator, Sequence

import torch

from . import bench, layout
from .hardware import bytes_per_element, normalize_dtype
from .references import reference
from .roofline import conv2d_flops


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


# --- shared pieces ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Geometry:
    n: int
    c: int
    h: int
    w: int
    k: int
    r: int
    s: int
    p: int
    q: int
    groups: int

    @property
    def cg(self) -> int:          # input channels per group
        return self.c // self.groups

    @property
    def kg(self) -> int:          # output channels per group
        return self.k // self.groups


def _geometry_of(x_shape: Sequence[int], w_shape: Sequence[int], cd: ConvolutionDescriptor,
                 dtype: Any = "fp32") -> _Geometry:
    if len(x_shape) != 4 or len(w_shape) != 4:
        raise ConvError(f"2-D convolution takes x (N, C, H, W) and w (K, C/groups, R, S), "
                        f"got shapes {tuple(x_shape)} and {tuple(w_shape)}")
    x_desc = TensorDescriptor(dtype, tuple(int(d) for d in x_shape))
    w_desc = FilterDescriptor(dtype, "NCHW", *(int(d) for d in w_shape))
    n, k, p, q = output_dims(x_desc, w_desc, cd)
    c, h, w = x_desc.dims[1:]
    return _Geometry(n, c, h, w, k, w_desc.r, w_desc.s, p, q, cd.groups)


def _geometry(x: torch.Tensor, w: torch.Tensor, cd: ConvolutionDescriptor) -> _Geometry:
    if not isinstance(x, torch.Tensor) or not isinstance(w, torch.Tensor):
        raise TypeError(f"x and w must be torch tensors, got {type(x).__name__} and {type(w).__name__}")
    if x.device != w.device:
        raise ConvError(f"x is on {x.device} but w on {w.device}")
    if x.dtype != w.dtype:
        raise ConvError(f"x is {x.dtype} but w is {w.dtype}")
    return _geometry_of(tuple(x.shape), tuple(w.shape), cd, x.dtype)


def _oriented(w: torch.Tensor, cd: ConvolutionDescriptor) -> torch.Tensor:
    """The filter as cross-correlation uses it: flipped in both spatial dims in CONVOLUTION mode."""
    return w.flip(-2, -1) if cd.mode is Mode.CONVOLUTION else w


def _is_nhwc(t: torch.Tensor) -> bool:
    return t.dim() == 4 and t.shape[1] > 1 and layout.format_of(layout.layout_of(t)) == "NHWC"


def _empty_like_format(like: torch.Tensor, dims: Sequence[int], zero: bool = False) -> torch.Tensor:
    """A new (N, C, H, W) tensor stored in ``like``'s format (NHWC stays NHWC)."""
    fmt = "NHWC" if _is_nhwc(like) else "NCHW"
    out = torch.empty_strided(tuple(dims), layout.format_strides(dims, fmt), dtype=like.dtype, device=like.device)
    return out.zero_() if zero else out


def _in_format(y: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return y.contiguous(memory_format=torch.channels_last) if _is_nhwc(like) else y.contiguous()


def _tap_range(out_len: int, in_len: int, stride: int, pad: int, offset: int) -> tuple[int, int, int]:
    """Output positions p whose input position ``p*stride - pad + offset`` lies inside
    ``[0, in_len)``: returns (p0, p1, first input position); empty when p1 <= p0."""
    p0 = max(0, -((offset - pad) // stride))                  # ceil((pad - offset) / stride)
    p1 = min(out_len, (in_len - 1 + pad - offset) // stride + 1)
    if p1 <= p0:
        return 0, 0, 0
    return p0, p1, p0 * stride - pad + offset


def _tap_ranges(g: _Geometry, cd: ConvolutionDescriptor) -> Iterator[tuple[int, int, tuple, tuple]]:
    """For each filter tap (r, s): the output rows and columns it touches, (p0, p1, h0) and (q0, q1, w0)."""
    (ph, pw), (u, v), (dh, dw) = cd.pad, cd.stride, cd.dilation
    for r in range(g.r):
        rows = _tap_range(g.p, g.h, u, ph, r * dh)
        for s in range(g.s):
            yield r, s, rows, _tap_range(g.q, g.w, v, pw, s * dw)


def _taps(g: _Geometry, cd: ConvolutionDescriptor) -> Iterator[tuple[int, int, slice, slice, slice, slice]]:
    """For each filter tap (r, s) that touches the output: the output rows/cols it touches and
    the input rows/cols it reads, as slices."""
    u, v = cd.stride
    for r, s, (p0, p1, h0), (q0, q1, w0) in _tap_ranges(g, cd):
        if p1 > p0 and q1 > q0:
            yield (r, s, slice(p0, p1), slice(q0, q1),
                   slice(h0, h0 + (p1 - p0 - 1) * u + 1, u), slice(w0, w0 + (q1 - q0 - 1) * v + 1, v))


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """FFT and Winograd transform in FP32 (FP64 for FP64 data): half has too few bits for them."""
    return torch.float64 if dtype == torch.float64 else torch.float32


# --- the reference -----------------------------------------------------------------------------

def _padded(x: torch.Tensor, ph: int, pw: int, extra_h: int = 0, extra_w: int = 0) -> torch.Tensor:
    n, c, h, w = x.shape
    xp = x.new_zeros(n, c, h + 2 * ph + extra_h, w + 2 * pw + extra_w)
    xp[:, :, ph:ph + h, pw:pw + w].copy_(x)
    return xp


@reference
def conv_direct(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """The definition (see the module docstring), one output pixel (p, q) at a time: the
    window of the zero-padded input under the filter, times the filter, summed over c, r, s."""
    g = _geometry(x, w, conv_desc)
    (ph, pw), (u, v), (dh, dw) = conv_desc.pad, conv_desc.stride, conv_desc.dilation
    wg = _oriented(w, conv_desc).reshape(g.groups, g.kg, g.cg, g.r, g.s)
    xp = _padded(x, ph, pw).reshape(g.n, g.groups, g.cg, g.h + 2 * ph, g.w + 2 * pw)
    y = x.new_zeros(g.n, g.k, g.p, g.q)                                  # (N, K, P, Q)
    for p in range(g.p):
        for q in range(g.q):
            window = xp[..., p * u: p * u + (g.r - 1) * dh + 1: dh,
                        q * v: q * v + (g.s - 1) * dw + 1: dw]           # (N, G, C', R, S)
            y[:, :, p, q] = torch.einsum("ngcrs,gkcrs->ngk", window, wg).reshape(g.n, g.k)
    return _in_format(y, x)


# --- im2col + GEMM ------------------------------------------------------------------------------

def _lower_into(cols: torch.Tensor, x: torch.Tensor, g: _Geometry, cd: ConvolutionDescriptor) -> None:
    """Write the batch's patches into ``cols``, a (N, G, C', R, S, P, Q) view of the workspace:
    entry (n, g, c, r, s, p, q) is the input value filter tap (r, s) of channel g*C' + c multiplies
    for output pixel (p, q) of image n, or 0 where that value lies in the padding.

    In the band of output rows whose every tap row lies inside the input, the patches of one
    filter column s are a strided *view* of the input (``as_strided``: R rows ``dil`` apart, one
    output pixel every ``stride``), copied in one go; each row above and below the band copies
    the filter rows that land inside the input the same way.
    """
    (ph, pw), (u, v), (dh, dw) = cd.pad, cd.stride, cd.dilation
    sn, sc, sh, sw = x.stride()
    # the band: tap row 0 lands at or after the first input row, tap row R-1 at or before the last
    p0, p1 = max(0, -(-ph // u)), min(g.p, (g.h - 1 + ph - (g.r - 1) * dh) // u + 1)
    if p1 <= p0:
        p0 = p1 = 0
    for s in range(g.s):
        q0, q1, w0 = _tap_range(g.q, g.w, v, pw, s * dw)
        band = cols[:, :, :, :, s, p0:p1]                                      # (N, G, C', R, P', Q)
        band[..., :q0].zero_()
        band[..., q1:].zero_()
        if p1 > p0 and q1 > q0:
            windows = x.as_strided((g.n, g.c, g.r, p1 - p0, q1 - q0), (sn, sc, dh * sh, u * sh, v * sw),
                                   x.storage_offset() + (p0 * u - ph) * sh + w0 * sw)
            band[..., q0:q1].copy_(windows.unflatten(1, (g.groups, g.cg)))
    for p in [*range(0, p0), *range(p1, g.p)]:                                # the rows above and below
        cols[..., p, :].zero_()
        top = p * u - ph                                       # the input row tap row 0 would read
        r_lo, r_hi = max(0, -(top // dh)), min(g.r, (g.h - 1 - top) // dh + 1)
        for s in range(g.s if r_lo < r_hi else 0):
            q0, q1, w0 = _tap_range(g.q, g.w, v, pw, s * dw)
            if q1 > q0:
                windows = x.as_strided((g.n, g.c, r_hi - r_lo, q1 - q0), (sn, sc, dh * sh, v * sw),
                                       x.storage_offset() + (top + r_lo * dh) * sh + w0 * sw)
                cols[:, :, :, r_lo:r_hi, s, p, q0:q1].copy_(windows.unflatten(1, (g.groups, g.cg)))


@reference
def im2col(x: torch.Tensor, r: int, s: int, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """The lowered input, (N, C*R*S, P*Q), rows ordered (c, r, s) as ``torch.nn.functional.unfold``
    orders them: column (p, q) of image n holds the C*R*S input values output pixel (p, q) reads."""
    n, c = x.shape[:2]
    g = _geometry_of(tuple(x.shape), (conv_desc.groups, c // conv_desc.groups, r, s), conv_desc)
    cols = x.new_empty(n, c, r, s, g.p, g.q)
    _lower_into(cols.unflatten(1, (conv_desc.groups, c // conv_desc.groups)), x, g, conv_desc)
    return cols.reshape(n, c * r * s, g.p * g.q)


def col2im(cols: torch.Tensor, x_shape: Sequence[int], r: int, s: int,
           conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """The adjoint of ``im2col``: adds every patch entry back onto the input pixel it came
    from, (N, C*R*S, P*Q) -> (N, C, H, W) (``torch.nn.functional.fold``)."""
    n, c, h, w = x_shape
    g = _geometry_of(x_shape, (conv_desc.groups, c // conv_desc.groups, r, s), conv_desc)
    cols = cols.reshape(n, c, r, s, g.p, g.q)
    x = cols.new_zeros(n, c, h, w)
    for rr, ss, ps, qs, hs, ws in _taps(g, conv_desc):
        x[:, :, hs, ws] += cols[:, :, rr, ss, ps, qs]
    return x


def _workspace_view(workspace: torch.Tensor | None, numel: int, like: torch.Tensor) -> torch.Tensor:
    """``numel`` elements of ``like``'s dtype, carved from a caller's byte workspace (as cuDNN
    takes a pointer and a size) or freshly allocated."""
    if workspace is None:
        return like.new_empty(numel)
    need = numel * like.element_size()
    if workspace.dtype != torch.uint8 or workspace.dim() != 1 or not workspace.is_contiguous():
        raise ConvError("the workspace must be a 1-D contiguous uint8 tensor (bytes), as workspace_size counts it")
    if workspace.numel() < need:
        raise ConvError(f"the workspace holds {workspace.numel()} bytes; this algorithm needs {need}")
    if workspace.device != like.device:
        raise ConvError(f"the workspace is on {workspace.device}, the tensors on {like.device}")
    return workspace[:need].view(like.dtype)


@reference
def conv_im2col(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor,
                workspace: torch.Tensor | None = None) -> torch.Tensor:
    """im2col + GEMM: lower the batch into a workspace of N*C*R*S*P*Q elements (R*S times
    the input, give or take the padding), then one GEMM per group.

    NCHW: each image lowers to a (C*R*S, P*Q) matrix and ``W (K, C*R*S) @ cols`` is the
    image's output in NCHW. NHWC: the batch lowers to (N*P*Q, R*S*C) and ``cols @ W (R*S*C, K)``
    is the output in NHWC. Each layout has the GEMM orientation that writes its own format,
    with no transposes (seed 004: flexible layouts avoid "the input/output transposition steps").
    """
    g = _geometry(x, w, conv_desc)
    wt = _oriented(w, conv_desc)
    ws = _workspace_view(workspace, g.n * g.c * g.r * g.s * g.p * g.q, x)
    y = _empty_like_format(x, (g.n, g.k, g.p, g.q))
    G, kg, cg, pq = g.groups, g.kg, g.cg, g.p * g.q
    if not _is_nhwc(x):
        cols = ws.view(g.n, g.c, g.r, g.s, g.p, g.q)
        _lower_into(cols.unflatten(1, (G, cg)), x, g, conv_desc)
        a = wt.reshape(G, kg, cg * g.r * g.s)                                    # (G, K', C'RS)
        torch.matmul(a, cols.view(g.n, G, cg * g.r * g.s, pq), out=y.view(g.n, G, kg, pq))
        return y
    cols = ws.view(g.n, g.p, g.q, G, g.r, g.s, cg)                       # rows (n, p, q), columns (r, s, c)
    _lower_into(cols.permute(0, 3, 6, 4, 5, 1, 2), x, g, conv_desc)               # seen as (N, G, C', R, S, P, Q)
    b = wt.reshape(G, kg, cg, g.r, g.s).permute(0, 3, 4, 2, 1).reshape(G, g.r * g.s * cg, kg)
    rows = cols.view(g.n * pq, G, g.r * g.s * cg)
    y_hwc = y.permute(0, 2, 3, 1)                                                  # (N, P, Q, K) view
    if G == 1:
        torch.matmul(rows[:, 0], b[0], out=y_hwc.view(g.n * pq, g.k))
    else:
        prod = torch.matmul(rows.transpose(0, 1), b)                              # (G, NPQ, K')
        y_hwc.view(g.n * pq, G, kg).copy_(prod.transpose(0, 1))
    return y


# --- implicit GEMM -------------------------------------------------------------------------------

@reference
def conv_implicit_gemm(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """The GEMM of im2col with its C*R*S reduction split by filter tap: for each (r, s), the
    input pixels that tap reads form a strided *view* (N, P', Q', C) of the input, multiplied
    by the tap's (C, K) slice of the filter and added into the output. No lowered matrix.

    (A fused GPU kernel keeps each tap's product in registers; this Python version goes
    through a temporary of at most the output's size per tap.)
    """
    g = _geometry(x, w, conv_desc)
    G, kg, cg = g.groups, g.kg, g.cg
    wt = _oriented(w, conv_desc).reshape(G, kg, cg, g.r, g.s)
    y = _empty_like_format(x, (g.n, g.k, g.p, g.q), zero=True)
    if not _is_nhwc(x):                      # per tap: W_tap (K', C') @ x_tap (C', P'Q') for each image and group
        for r, s, ps, qs, hs, ws in _taps(g, conv_desc):
            x_tap = x[:, :, hs, ws]                                               # (N, C, P', Q') view
            prod = torch.matmul(wt[..., r, s], x_tap.reshape(g.n, G, cg, -1))     # (N, G, K', P'Q')
            y[:, :, ps, qs] += prod.view(g.n, g.k, *x_tap.shape[2:])
        return y
    y_hwc = y.permute(0, 2, 3, 1)                                                 # (N, P, Q, K) view
    x_hwc = x.permute(0, 2, 3, 1)                                                 # (N, H, W, C) view
    for r, s, ps, qs, hs, ws in _taps(g, conv_desc):     # per tap: x_tap (N P' Q', C') @ W_tap^T (C', K')
        x_tap = x_hwc[:, hs, ws]                                                  # (N, P', Q', C) view
        rows = x_tap.reshape(-1, G, cg).transpose(0, 1)                          # (G, N P' Q', C')
        prod = torch.matmul(rows, wt[..., r, s].transpose(1, 2))                  # (G, N P' Q', K')
        y_hwc[:, ps, qs] += prod.transpose(0, 1).reshape(*x_tap.shape[:3], g.k)
    return y


# --- FFT -------------------------------------------------------------------------------------------

def _fft_sizes(g: _Geometry, cd: ConvolutionDescriptor) -> tuple[int, int]:
    return g.h + 2 * cd.pad[0], g.w + 2 * cd.pad[1]


@reference
def conv_fft(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """Cross-correlation as a product of spectra: ``Y = X * conj(W)`` per frequency, summed
    over channels. The FFT size is the padded input's: circular correlation then wraps around
    only beyond the last valid output. Stride 1 only (cuDNN's FFT has the same limit);
    dilation by spreading the filter with zeros."""
    status, reason = _support(Algo.FFT, conv_desc, (w.shape[2], w.shape[3]))
    if status is not Status.SUCCESS:
        raise NotSupportedError(reason)
    g = _geometry(x, w, conv_desc)
    (ph, pw), (dh, dw) = conv_desc.pad, conv_desc.dilation
    hf, wf = _fft_sizes(g, conv_desc)
    ct = _compute_dtype(x.dtype)
    wt = _oriented(w, conv_desc).to(ct)
    spread = wt.new_zeros(g.k, g.cg, (g.r - 1) * dh + 1, (g.s - 1) * dw + 1)
    spread[:, :, ::dh, ::dw].copy_(wt)
    xs = torch.fft.rfft2(_padded(x.to(ct), ph, pw), s=(hf, wf))                 # (N, C, Hf, Wf/2+1)
    ws = torch.fft.rfft2(spread, s=(hf, wf))                                     # (K, C', Hf, Wf/2+1)
    fq = xs.shape[-1]
    # at each frequency f and group: Y_f (N, K') = X_f (N, C') @ conj(W_f) (C', K'), a batched GEMM
    x_f = xs.view(g.n, g.groups, g.cg, hf * fq).permute(1, 3, 0, 2)               # (G, F, N, C')
    w_f = ws.conj().view(g.groups, g.kg, g.cg, hf * fq).permute(0, 3, 2, 1)       # (G, F, C', K')
    ys = torch.matmul(x_f, w_f).permute(2, 0, 3, 1).reshape(g.n, g.k, hf, fq)     # (N, K, Hf, Wf/2+1)
    y = torch.fft.irfft2(ys, s=(hf, wf))[:, :, :g.p, :g.q]
    return _in_format(y.to(x.dtype), x)


# --- Winograd F(2x2, 3x3) ----------------------------------------------------------------------------

# Lavin & Gray's F(2, 3): two outputs of a 3-tap correlation from 4 inputs with 4 multiplies,
# y = A^T [(G g) * (B^T d)]; in 2-D, Y = A^T [(G g G^T) * (B^T d B)] A.
WINOGRAD_BT = ((1.0, 0.0, -1.0, 0.0),
               (0.0, 1.0, 1.0, 0.0),
               (0.0, -1.0, 1.0, 0.0),
               (0.0, 1.0, 0.0, -1.0))
WINOGRAD_G = ((1.0, 0.0, 0.0),
              (0.5, 0.5, 0.5),
              (0.5, -0.5, 0.5),
              (0.0, 0.0, 1.0))
WINOGRAD_AT = ((1.0, 1.0, 1.0, 0.0),
               (0.0, 1.0, -1.0, -1.0))


def _sandwich(left: torch.Tensor, t: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
    """``left @ t @ right.T`` for a batch of small matrices ``t`` (..., a, b), as two big GEMMs
    (a batched matmul of 4x4 tiles one by one would be slow)."""
    return ((t @ right.T).transpose(-1, -2) @ left.T).transpose(-1, -2)


def _winograd_matrices(like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(torch.tensor(m, dtype=like.dtype, device=like.device)
                 for m in (WINOGRAD_BT, WINOGRAD_G, WINOGRAD_AT))


@reference
def winograd_1d(d: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """F(2, 3): the two outputs ``y[i] = d[i]*g[0] + d[i+1]*g[1] + d[i+2]*g[2]`` (i = 0, 1) of a
    4-input tile ``d`` and a 3-tap filter ``g``, with 4 multiplies: ``A^T [(G g) * (B^T d)]``."""
    d, g = torch.as_tensor(d), torch.as_tensor(g)
    bt, gm, at = _winograd_matrices(d.to(_compute_dtype(d.dtype)))
    return at @ ((gm @ g.to(bt.dtype)) * (bt @ d.to(bt.dtype)))


@reference
def conv_winograd(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """Winograd F(2x2, 3x3), non-fused: transform the filters (U = G g G^T, 4x4 each) and
    the input's overlapping 4x4 tiles (V = B^T d B, tiles 2 apart), multiply and sum over
    channels at each of the 16 positions (16 batched GEMMs), transform back (Y = A^T M A).
    3x3 filters, stride 1, no dilation: anything else raises ``NotSupportedError``."""
    status, reason = _support(Algo.WINOGRAD, conv_desc, (w.shape[2], w.shape[3]))
    if status is not Status.SUCCESS:
        raise NotSupportedError(reason)
    g = _geometry(x, w, conv_desc)
    ph, pw = conv_desc.pad
    tp, tq = -(-g.p // 2), -(-g.q // 2)                         # tiles down and across
    ct = _compute_dtype(x.dtype)
    bt, gm, at = _winograd_matrices(x.new_empty(0, dtype=ct))
    # zero padding, plus a row/column more when P or Q is odd so the last tile is whole
    xp = _padded(x.to(ct), ph, pw, 2 * tp + 2 - (g.h + 2 * ph), 2 * tq + 2 - (g.w + 2 * pw))
    sn, sc, sh, sw = xp.stride()
    tiles = xp.as_strided((g.n, g.c, tp, tq, 4, 4), (sn, sc, 2 * sh, 2 * sw, sh, sw))   # a view
    v = _sandwich(bt, tiles, bt)                                      # B^T d B: (N, C, TP, TQ, 4, 4)
    u = _sandwich(gm, _oriented(w, conv_desc).to(ct), gm)             # G g G^T: (K, C', 4, 4)
    t = g.n * tp * tq
    v16 = v.permute(4, 5, 1, 0, 2, 3).reshape(16, g.groups, g.cg, t)
    u16 = u.permute(2, 3, 0, 1).reshape(16, g.groups, g.kg, g.cg)
    m = (u16 @ v16).reshape(4, 4, g.k, g.n, tp, tq).permute(3, 2, 4, 5, 0, 1)  # (N, K, TP, TQ, 4, 4)
    y = _sandwich(at, m, at)                                          # A^T M A: (N, K, TP, TQ, 2, 2)
    y = y.permute(0, 1, 2, 4, 3, 5).reshape(g.n, g.k, 2 * tp, 2 * tq)[:, :, :g.p, :g.q]
    return _in_format(y.to(x.dtype), x)


# --- algorithm table, support, workspace -------------------------------------------------------------

ALGORITHMS: dict[Algo, Callable[..., torch.Tensor]] = {
    Algo.DIRECT: conv_direct,
    Algo.GEMM: conv_im2col,
    Algo.IMPLICIT_GEMM: conv_implicit_gemm,
    Algo.FFT: conv_fft,
    Algo.WINOGRAD: conv_winograd,
}


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


@reference
def workspace_size(algo: Any, x_desc: TensorDescriptor, w_desc: FilterDescriptor,
                   conv_desc: ConvolutionDescriptor) -> int:
    """Bytes of workspace ``algo`` needs (``cudnnGetConvolutionForwardWorkspaceSize``), in
    elements of the compute dtype (FP32 for FP16/BF16/FP32 data in FFT and Winograd):

    - DIRECT, IMPLICIT_GEMM: 0;
    - GEMM: the lowered batch, ``N * C*R*S * P*Q`` elements. Seed 001's case read as one
      128-channel 128x128 image, 3x3, FP32: 128*9*128*128*4 B = 72 MiB, its 72 MB (11x11: 968 MiB);
    - FFT: the spectra of the input, the filters and the output, ``(N*C + K*C' + N*K) * Hf*(Wf//2+1)``
      complex values (2 elements each), Hf x Wf the padded input;
    - WINOGRAD: what the non-fused algorithm keeps between its kernels, with T = N*ceil(P/2)*ceil(Q/2)
      tiles: V (16*C*T), U (16*K*C') and M (16*K*T).
    """
    a = _algo(algo)
    n, k, p, q = output_dims(x_desc, w_desc, conv_desc)
    status, reason = _support(a, conv_desc, (w_desc.r, w_desc.s))
    if status is not Status.SUCCESS:
        raise NotSupportedError(reason)
    c, cg, r, s = x_desc.dims[1], w_desc.c, w_desc.r, w_desc.s
    data = int(bytes_per_element(x_desc.dtype))
    compute = 8 if x_desc.dtype == "fp64" else 4
    if a in (Algo.DIRECT, Algo.IMPLICIT_GEMM):
        return 0
    if a is Algo.GEMM:
        return n * c * r * s * p * q * data
    if a is Algo.FFT:
        hf, wf = x_desc.dims[2] + 2 * conv_desc.pad[0], x_desc.dims[3] + 2 * conv_desc.pad[1]
        return (n * c + k * cg + n * k) * hf * (wf // 2 + 1) * 2 * compute
    tiles = n * -(-p // 2) * -(-q // 2)
    return 16 * (c * tiles + k * cg + k * tiles) * compute


# --- the forward call -----------------------------------------------------------------------------

@contextlib.contextmanager
def _math(cd: ConvolutionDescriptor, device: torch.device) -> Iterator[None]:
    """On a GPU, TENSOR_OP_MATH lets FP32 GEMMs use TF32 tensor cores and the other math types
    forbid it, for the duration of the call. A CPU has no TF32: nothing changes there."""
    if device.type != "cuda":
        yield
        return
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = cd.math_type is MathType.TENSOR_OP_MATH
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def _blend(result: torch.Tensor, alpha: float, beta: float, out: torch.Tensor | None, what: str) -> torch.Tensor:
    """``out = alpha * result + beta * out`` as cuDNN blends (out is not read when beta == 0)."""
    if out is None:
        if beta != 0:
            raise ConvError(f"beta={beta} blends with the prior {what}: pass it (the `y=` tensor)")
        return result if alpha == 1 else result * alpha
    if tuple(out.shape) != tuple(result.shape):
        raise ConvError(f"the given {what} has shape {tuple(out.shape)}, expected {tuple(result.shape)}")
    if out.dtype != result.dtype or out.device != result.device:
        raise ConvError(f"the given {what} is {out.dtype} on {out.device}, expected {result.dtype} on {result.device}")
    if not layout.layout_of(out).is_non_overlapping():
        raise ConvError(f"the {what}'s strides {tuple(out.stride())} make elements overlap: cuDNN outputs may not")
    if beta == 0:
        out.copy_(result if alpha == 1 else result * alpha)
    else:
        out.mul_(beta).add_(result, alpha=alpha)
    return out


@reference
def conv_forward(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor, algo: Any = Algo.GEMM,
                 alpha: float = 1.0, beta: float = 0.0, y: torch.Tensor | None = None,
                 workspace: torch.Tensor | None = None) -> torch.Tensor:
    """``cudnnConvolutionForward``: ``y = alpha * conv(x, w) + beta * y`` with algorithm ``algo``.

    ``x`` is (N, C, H, W) in NCHW or NHWC memory, ``w`` (K, C/groups, R, S); ``y`` (optional)
    receives the result in its own format, otherwise a new tensor in ``x``'s format comes back.
    ``workspace`` (optional, GEMM only) is a uint8 tensor of at least ``workspace_size`` bytes.
    Raises ``ConvError`` for an impossible configuration and ``NotSupportedError`` when ``algo``
    cannot compute it.
    """
    a = _algo(algo)
    _geometry(x, w, conv_desc)
    status, reason = _support(a, conv_desc, (w.shape[2], w.shape[3]))
    if status is not Status.SUCCESS:
        raise NotSupportedError(reason)
    with _math(conv_desc, x.device):
        result = conv_im2col(x, w, conv_desc, workspace) if a is Algo.GEMM else ALGORITHMS[a](x, w, conv_desc)
    return _blend(result, alpha, beta, y, "output y")


# --- find ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AlgoPerf:
    """One row of find's answer (cuDNN's ``cudnnConvolutionFwdAlgoPerf_t``): the algorithm,
    whether it ran, its median time in seconds (inf when it did not run), its workspace in bytes."""

    algo: Algo
    status: Status
    time: float
    memory: int
    note: str = ""
    measurement: bench.Measurement | None = field(default=None, compare=False, repr=False)

    @property
    def time_ms(self) -> float:
        return self.time * 1e3

    def __str__(self) -> str:
        t = f"{self.time_ms:.3f} ms" if math.isfinite(self.time) else "-"
        return f"algo: {self.algo.value}, {t}, {self.memory} B, status: {self.status.value}" + (
            f" ({self.note})" if self.note else "")


DEFAULT_FIND = (Algo.GEMM, Algo.IMPLICIT_GEMM, Algo.FFT, Algo.WINOGRAD)


def find_algorithms(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor,
                    algos: Sequence[Any] | None = None, *, workspace_limit: int | None = None,
                    requested: int | None = None, timer: Callable[..., bench.Measurement] | None = None,
                    **timer_kwargs: Any) -> list[AlgoPerf]:
    """``cudnnFindConvolutionForwardAlgorithm``: run every candidate, time it, rank.

    Candidates (default: GEMM, IMPLICIT_GEMM, FFT, WINOGRAD; DIRECT is the slow reference) that
    cannot do this convolution are reported NOT_SUPPORTED, those needing more workspace than
    ``workspace_limit`` bytes ALLOC_FAILED, without running. The others are timed by ``timer``
    (default ``gpudl.bench.measure`` on the tensors' device: warm-up, CUDA events on a GPU) with
    the workspace allocated beforehand. Returns the successes by increasing median time, then
    the rest; at most ``requested`` rows.
    """
    x_desc, w_desc = TensorDescriptor.from_tensor(x), FilterDescriptor(w.dtype, "NCHW", *w.shape)
    output_dims(x_desc, w_desc, conv_desc)
    if timer is None:
        device = "cuda" if x.is_cuda else "cpu"
        timer = lambda fn, **kw: bench.measure(fn, device=device, **kw)   # noqa: E731
    done, failed = [], []
    for a in (DEFAULT_FIND if algos is None else [_algo(a) for a in algos]):
        status, reason = supported(a, x_desc, w_desc, conv_desc)
        if status is not Status.SUCCESS:
            failed.append(AlgoPerf(a, status, math.inf, 0, reason))
            continue
        memory = workspace_size(a, x_desc, w_desc, conv_desc)
        if workspace_limit is not None and memory > workspace_limit:
            failed.append(AlgoPerf(a, Status.ALLOC_FAILED, math.inf, memory,
                                   f"needs {memory} B, the limit is {workspace_limit} B"))
            continue
        ws = torch.empty(memory, dtype=torch.uint8, device=x.device) if a is Algo.GEMM else None
        m = timer(lambda a=a, ws=ws: conv_forward(x, w, conv_desc, a, workspace=ws), **timer_kwargs)
        done.append(AlgoPerf(a, Status.SUCCESS, m.median, memory, measurement=m))
    ranked = sorted(done, key=lambda perf: perf.time) + failed
    return ranked[:requested] if requested is not None else ranked


# --- backward -------------------------------------------------------------------------------------------

BACKWARD_ALGOS = (Algo.DIRECT, Algo.GEMM, Algo.IMPLICIT_GEMM)


def _backward_algo(algo: Any) -> Algo:
    a = _algo(algo)
    if a not in BACKWARD_ALGOS:
        raise NotSupportedError(f"backward passes are written for {[b.value for b in BACKWARD_ALGOS]}, not {a.value}")
    return a


def _check_dy(dy: torch.Tensor, g: _Geometry) -> None:
    if tuple(dy.shape) != (g.n, g.k, g.p, g.q):
        raise ConvError(f"dy has shape {tuple(dy.shape)}, but this convolution's output is {(g.n, g.k, g.p, g.q)}")


def conv_backward_data(w: torch.Tensor, dy: torch.Tensor, conv_desc: ConvolutionDescriptor,
                       x_shape: Sequence[int], algo: Any = Algo.GEMM, alpha: float = 1.0, beta: float = 0.0,
                       dx: torch.Tensor | None = None) -> torch.Tensor:
    """``cudnnConvolutionBackwardData``: the gradient with respect to the input, (N, C, H, W)
    in ``dy``'s format. Each input pixel collects ``w^T dy`` from every output it fed."""
    a = _backward_algo(algo)
    g = _geometry_of(tuple(x_shape), tuple(w.shape), conv_desc)
    _check_dy(dy, g)
    (ph, pw), (u, v), (dh, dw) = conv_desc.pad, conv_desc.stride, conv_desc.dilation
    wg = _oriented(w, conv_desc).reshape(g.groups, g.kg, g.cg, g.r, g.s)
    dyg = dy.reshape(g.n, g.groups, g.kg, g.p, g.q)
    if a is Algo.DIRECT:
        dxp = dy.new_zeros(g.n, g.groups, g.cg, g.h + 2 * ph, g.w + 2 * pw)
        for p in range(g.p):
            for q in range(g.q):
                dxp[..., p * u: p * u + (g.r - 1) * dh + 1: dh, q * v: q * v + (g.s - 1) * dw + 1: dw] += \
                    torch.einsum("ngk,gkcrs->ngcrs", dyg[..., p, q], wg)
        result = dxp[..., ph:ph + g.h, pw:pw + g.w].reshape(g.n, g.c, g.h, g.w)
    elif a is Algo.GEMM:
        at = wg.reshape(g.groups, g.kg, g.cg * g.r * g.s).transpose(1, 2)          # (G, C'RS, K')
        dcols = torch.matmul(at.unsqueeze(0), dyg.reshape(g.n, g.groups, g.kg, g.p * g.q))
        result = col2im(dcols.reshape(g.n, g.c * g.r * g.s, g.p * g.q), (g.n, g.c, g.h, g.w),
                        g.r, g.s, conv_desc)
    else:
        result = dy.new_zeros(g.n, g.h, g.w, g.groups, g.cg)
        dy_hwc = dy.permute(0, 2, 3, 1).unflatten(-1, (g.groups, g.kg))
        for r, s, ps, qs, hs, ws in _taps(g, conv_desc):
            result[:, hs, ws] += torch.einsum("npqgk,gkc->npqgc", dy_hwc[:, ps, qs], wg[..., r, s])
        result = result.flatten(-2).permute(0, 3, 1, 2)
    return _blend(_in_format(result, dy), alpha, beta, dx, "input gradient dx")


def conv_backward_filter(x: torch.Tensor, dy: torch.Tensor, conv_desc: ConvolutionDescriptor,
                         w_shape: Sequence[int], algo: Any = Algo.GEMM, alpha: float = 1.0, beta: float = 0.0,
                         dw: torch.Tensor | None = None) -> torch.Tensor:
    """``cudnnConvolutionBackwardFilter``: the gradient with respect to the filter,
    (K, C/groups, R, S) packed NCHW: each tap sums ``dy * x`` over every pixel it touched."""
    a = _backward_algo(algo)
    g = _geometry_of(tuple(x.shape), tuple(w_shape), conv_desc)
    _check_dy(dy, g)
    (ph, pw), (u, v), (dh, dw_) = conv_desc.pad, conv_desc.stride, conv_desc.dilation
    dyg = dy.reshape(g.n, g.groups, g.kg, g.p, g.q)
    if a is Algo.DIRECT:
        xp = _padded(x, ph, pw).reshape(g.n, g.groups, g.cg, g.h + 2 * ph, g.w + 2 * pw)
        grad = x.new_zeros(g.groups, g.kg, g.cg, g.r, g.s)
        for p in range(g.p):
            for q in range(g.q):
                window = xp[..., p * u: p * u + (g.r - 1) * dh + 1: dh, q * v: q * v + (g.s - 1) * dw_ + 1: dw_]
                grad += torch.einsum("ngk,ngcrs->gkcrs", dyg[..., p, q], window)
    elif a is Algo.GEMM:
        cols = x.new_empty(g.n, g.c, g.r, g.s, g.p, g.q)
        _lower_into(cols.unflatten(1, (g.groups, g.cg)), x, g, conv_desc)
        grad = torch.matmul(dyg.reshape(g.n, g.groups, g.kg, g.p * g.q),
                            cols.view(g.n, g.groups, g.cg * g.r * g.s, g.p * g.q).transpose(-1, -2)).sum(0)
    else:
        grad = x.new_zeros(g.groups, g.kg, g.cg, g.r, g.s)
        x_hwc = x.permute(0, 2, 3, 1).unflatten(-1, (g.groups, g.cg))
        dy_hwc = dy.permute(0, 2, 3, 1).unflatten(-1, (g.groups, g.kg))
        for r, s, ps, qs, hs, ws in _taps(g, conv_desc):
            grad[..., r, s] = torch.einsum("npqgk,npqgc->gkc", dy_hwc[:, ps, qs], x_hwc[:, hs, ws])
    grad = _oriented(grad.reshape(g.k, g.cg, g.r, g.s), conv_desc).contiguous()
    return _blend(grad, alpha, beta, dw, "filter gradient dw")


def forward(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor,
            algo: Any = Algo.GEMM) -> tuple[torch.Tensor, tuple]:
    """``y`` and the cache ``backward`` needs."""
    y = conv_forward(x, w, conv_desc, algo)
    return y, (x, w, conv_desc, _algo(algo))


def backward(dy: torch.Tensor, cache: tuple, algo: Any | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dw) from ``dy`` and ``forward``'s cache. The backward algorithm is ``algo``, else
    the forward's when it has a backward, else GEMM."""
    x, w, cd, fwd_algo = cache
    a = _algo(algo) if algo is not None else (fwd_algo if fwd_algo in BACKWARD_ALGOS else Algo.GEMM)
    return (conv_backward_data(w, dy, cd, tuple(x.shape), a),
            conv_backward_filter(x, dy, cd, tuple(w.shape), a))


# --- benchmark ----------------------------------------------------------------------------------------

# Seed 001's table: 128x128x128x128 FP32 NCHW on a Quadro GV100, 3x3 filters (ms, MB).
SEED_GV100_3X3 = {"GEMM": (0.76, 72), "IMPLICIT_GEMM": (0.62, 0), "IMPLICIT_PRECOMP_GEMM": (0.47, 0.01),
                  "FFT": (45.3, 8322), "FFT_TILING": (3.69, 70), "WINOGRAD": (0.26, 1.56),
                  "WINOGRAD_NONFUSED": (2.73, 578)}


def _bench_conv(argv: list[str]) -> bench.Table:
    """find_algorithms next to torch's conv2d (cuDNN on a GPU, oneDNN on a CPU)."""
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(prog="gpudl bench conv", description=_bench_conv.__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter timing budget, fewer rounds")
    parser.add_argument("--n", type=int, default=1 if cuda else 8)
    parser.add_argument("--c", type=int, default=128 if cuda else 64)
    parser.add_argument("--hw", type=int, default=128 if cuda else 56)
    parser.add_argument("--k", type=int, default=128 if cuda else 64)
    parser.add_argument("--r", type=int, default=3)
    parser.add_argument("--layout", choices=["NCHW", "NHWC"], default="NCHW")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for torch (a shared machine gives steadier ratios with 1)")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        return _bench_conv_run(args, cuda)
    finally:
        torch.set_num_threads(threads)


def _bench_conv_run(args: argparse.Namespace, cuda: bool) -> bench.Table:
    device = "cuda" if cuda else "cpu"
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(args.n, args.c, args.hw, args.hw, generator=gen).to(device)
    w = torch.randn(args.k, args.c, args.r, args.r, generator=gen).to(device)
    if args.layout == "NHWC":
        x = layout.to_format(x, "NHWC")
    cd = ConvolutionDescriptor(pad=args.r // 2)                    # DEFAULT_MATH: our GEMMs in true FP32
    flops = conv_flops(TensorDescriptor.from_tensor(x), FilterDescriptor(w.dtype, "NCHW", *w.shape), cd)
    timing = {"budget_s": 0.3 if args.quick else 1.0, "min_runs": 3 if args.quick else 5}
    # torch's convolution: on a GPU cuDNN twice, with TF32 tensor cores forbidden (true FP32, what our
    # algorithms compute) and allowed (PyTorch's default for convolutions on Ampere and later).
    libraries = {"cuDNN FP32 (torch)": False, "cuDNN TF32 (torch)": True} if cuda else {"torch CPU conv2d": False}
    baseline = next(iter(libraries))
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    lib_best: dict[str, bench.Measurement] = {}
    best: dict[Algo, AlgoPerf] = {}
    try:
        torch.backends.cudnn.benchmark = True                      # cuDNN's own find, in its warm-up
        # Rounds alternate torch and find, and each keeps its best median: on a shared machine a
        # burst of someone else's work then spoils one round, not the comparison.
        for _ in range(2 if args.quick else 3):
            for name, tf32 in libraries.items():
                torch.backends.cudnn.allow_tf32 = tf32
                m = bench.measure(lambda: torch.nn.functional.conv2d(x, w, padding=args.r // 2), device=device,
                                  what=name, **timing)
                if name not in lib_best or m.median < lib_best[name].median:
                    lib_best[name] = m
            for perf in find_algorithms(x, w, cd, **timing):
                if perf.algo not in best or perf.time < best[perf.algo].time:
                    best[perf.algo] = perf
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = saved
    base = lib_best[baseline].median
    title = (f"convolution N={args.n} C={args.c} {args.hw}x{args.hw} K={args.k} {args.r}x{args.r} pad {args.r // 2}, "
             f"FP32 {args.layout} on {device}" + ("" if cuda else f" ({torch.get_num_threads()} threads)"))
    table = bench.Table(title)
    for perf in sorted(best.values(), key=lambda perf: perf.time):
        ran = math.isfinite(perf.time)
        row = {"algorithm": perf.algo.value, "status": perf.status.value,
               "median ms": perf.time_ms if ran else None, "workspace MiB": perf.memory / 2**20,
               "GFLOP/s": flops / perf.time / 1e9 if ran else None,
               f"x {baseline}": perf.time / base if ran else None}
        seed = SEED_GV100_3X3.get(perf.algo.value)
        if cuda and seed and args.r == 3:
            row["seed GV100 ms"], row["seed GV100 MB"] = seed
        table.rows.append(row)
    for name, m in lib_best.items():
        table.rows.append({"algorithm": name, "status": "SUCCESS", "median ms": m.median * 1e3,
                           "workspace MiB": None, "GFLOP/s": flops / m.median / 1e9, f"x {baseline}": m.median / base})
    table.notes.append(f"times: the best of the rounds' medians ({'CUDA events, L2 flushed' if cuda else 'perf_counter'}); "
                       "our algorithms run with DEFAULT_MATH (matmul TF32 off: true FP32)")
    if cuda:
        table.notes.append("seed columns: seed 001's Quadro GV100 table (read as N=1, C=K=128, 128x128: then its GEMM "
                           "workspace of 72 MB is exactly one lowered image). cuDNN's own workspace is not visible "
                           "through torch")
    else:
        table.notes.append("on a CPU the GPU rows (cuDNN FP32/TF32, the seed's GV100 figures) are absent; acceptance: "
                           "GEMM (im2col) within 2x of torch's CPU conv2d")
    return table


BENCHMARKS = {"conv": _bench_conv}
