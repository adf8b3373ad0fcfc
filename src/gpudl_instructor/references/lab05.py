"""The references of lab05_layouts_conv (tensor layouts and cuDNN-style convolution), in the
lab's reading order, with the convolution library they belong to (lecture 05's algorithms and
Triton kernels, which ``gpudl bench conv`` measures against cuDNN).

Nothing here is in the course edition: ``gpudl.layout`` keeps the ``Layout`` class, the format
letters and ``is_view``; ``gpudl.conv`` keeps cuDNN's vocabulary (the enums, the three
descriptors, find's ``AlgoPerf``, the lecture's table). What computes a graded answer is here.

1. Strides and offsets (``strides``, ``offset``): ``row_major_strides``, ``permutation_strides``,
   ``format_strides`` (the exercise), ``format_layout``, ``offset`` (the exercise), and a layout's
   ``offsets`` and ``coordinate``.
2. NCHW <-> NHWC (``convert``): ``nchw_to_nhwc``, ``nhwc_to_nchw``, ``convert``, ``to_format``.
3. Output dims (``output_dim``): ``output_size`` (the exercise), ``output_dims``; with them
   ``conv_flops`` and ``supported`` (which algorithm can compute a problem).
4. Convolution as a matrix multiply (``im2col``, ``conv2d_gemm``): the shared geometry
   (``_Geometry``, ``_taps``), ``conv_direct`` (the definition), ``im2col``, ``col2im``,
   ``conv_im2col`` (GEMM), ``conv_implicit_gemm`` (one Triton kernel on a GPU), ``conv_fft``.
5. Winograd (``winograd_f23``, ``winograd_conv``): ``WINOGRAD_BT``, ``WINOGRAD_G``,
   ``WINOGRAD_AT``, ``winograd_1d``, ``conv_winograd`` (its transforms as Triton kernels on a
   GPU); then ``ALGORITHMS`` and ``conv_forward`` (``cudnnConvolutionForward``).
6. Workspaces (``workspace_bytes``): ``workspace_size`` (descriptors), ``workspace_bytes`` (the
   exercise's plain arguments).
7. Find (``find``): ``find`` (the exercise), ``find_records`` (it on the check's fake candidates,
   as plain data: what the visible check's store holds), ``find_algorithms``
   (``cudnnFindConvolutionForwardAlgorithm`` on this library's algorithms).
8. The questions (``winograd_saving``, ``flatten_layout``) are judged in
   ``gpudl_instructor.checks.lab05``.

Then the backward passes (``conv_backward_data``, ``conv_backward_filter``, ``forward``,
``backward``), which no exercise asks for but which share the forward's pieces.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from gpudl import hardware, timing
from gpudl._launch import Relauncher, compiled_for, fastest, input_precision
from gpudl.conv import (DEFAULT_FIND, Algo, AlgoPerf, ConvError, ConvolutionDescriptor, FilterDescriptor, MathType,
                        Mode, NotSupportedError, Status, TensorDescriptor)
from gpudl.conv.descriptors import _algo
from gpudl.layout import LOGICAL, Layout, _ints, format_of, layout_of
from gpudl.references import reference

try:        # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
    import triton
    import triton.language as tl
except ImportError:                     # the torch paths need no Triton
    triton = None


# === 1. strides and offsets =======================================================================

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


@reference
def offset(coord: Sequence[int], strides: Sequence[int]) -> int:
    """Where ``coord`` lives: the dot product of the coordinate with the strides."""
    coord, strides = _ints("coordinate", coord), _ints("strides", strides)
    if len(coord) != len(strides):
        raise ValueError(f"coordinate {coord} has {len(coord)} indices but there are {len(strides)} strides")
    return sum(i * d for i, d in zip(coord, strides))


def offsets(lay: Layout) -> np.ndarray:
    """Every coordinate's offset in ``lay``, as an int64 array of shape ``lay.shape``."""
    out = np.zeros(lay.shape, dtype=np.int64)
    for axis, (n, d) in enumerate(zip(lay.shape, lay.stride)):
        index_shape = [1] * lay.rank
        index_shape[axis] = n
        out += (np.arange(n, dtype=np.int64) * d).reshape(index_shape)
    return out


def coordinate(lay: Layout, off: int) -> tuple[int, ...]:
    """The coordinate stored at offset ``off`` of a compact layout (the inverse of ``offset``)."""
    if not lay.is_compact():
        raise ValueError(f"{lay} is not compact: an offset may hold no element or several")
    if not 0 <= off < lay.size:
        raise IndexError(f"offset {off} is outside 0..{lay.size - 1}")
    coord = [0] * lay.rank
    for axis in sorted(range(lay.rank), key=lambda a: -lay.stride[a]):
        if lay.shape[axis] > 1:
            coord[axis], off = divmod(off, lay.stride[axis])
    return tuple(coord)


# === 2. NCHW <-> NHWC =============================================================================

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


# === 3. output dims (and what each algorithm supports) ============================================

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
    """FLOPs of the convolution as defined (2 per multiply-add), whatever the algorithm: each of
    the N*K*P*Q outputs sums C/groups * R * S products."""
    n, k, p, q = output_dims(x_desc, w_desc, conv_desc)
    return 2 * n * k * p * q * w_desc.c * w_desc.r * w_desc.s


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


# === 4. convolution as a matrix multiply: the shared geometry =====================================

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
    return t.dim() == 4 and t.shape[1] > 1 and format_of(layout_of(t)) == "NHWC"


def _empty_like_format(like: torch.Tensor, dims: Sequence[int], zero: bool = False) -> torch.Tensor:
    """A new (N, C, H, W) tensor stored in ``like``'s format (NHWC stays NHWC)."""
    fmt = "NHWC" if _is_nhwc(like) else "NCHW"
    out = torch.empty_strided(tuple(dims), format_strides(dims, fmt), dtype=like.dtype, device=like.device)
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


def _padded(x: torch.Tensor, ph: int, pw: int, extra_h: int = 0, extra_w: int = 0) -> torch.Tensor:
    n, c, h, w = x.shape
    xp = x.new_zeros(n, c, h + 2 * ph + extra_h, w + 2 * pw + extra_w)
    xp[:, :, ph:ph + h, pw:pw + w].copy_(x)
    return xp


# === 4. the definition (DIRECT) ===================================================================

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


# === 4. im2col + GEMM (GEMM) ======================================================================

# im2col + GEMM (cuDNN's GEMM algorithm): lower the input into a matrix, then multiply.
#
# Each output pixel reads a C*R*S patch of the input; writing the patches as the columns of a
# (C*R*S, P*Q) matrix per image (the *workspace*, R*S times the input) turns the convolution
# into one GEMM with the (K, C*R*S) filter matrix.


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
    with no transposes (the lecture: flexible layouts avoid "the input/output transposition steps").
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


# === 4. implicit GEMM (IMPLICIT_GEMM) =============================================================

# Implicit GEMM (cuDNN's IMPLICIT_GEMM): the GEMM of im2col without the lowered matrix.
#
# The GEMM of im2col sums over C*R*S; split that sum by filter tap (r, s) and each tap's part is
# a GEMM of the tap's (K', C') slice of the filter with the C' x (output pixels) input values
# that tap reads, which is a *view* of the input, never a copy of R*S times the input.
#
# With stride 1 the view is even simpler if the output is computed at the padded input's width:
# output pixel ``j = n*Hp*Wp + p*Wp + q`` of a padded image, laid out channel by channel
# (C, N*Hp*Wp), reads input ``j + r*dil_h*Wp + s*dil_w`` for tap (r, s). So each tap's operand
# is a plain slice of one padded copy of the input, a matrix with unit column stride that a
# GEMM reads in place, and the nine (R*S) GEMMs accumulate into one output (beta = 1). The
# output's extra columns (q >= Q) and rows (p >= P) are computed and dropped: (Hp*Wp)/(P*Q)
# times the work, 3% for a 128x128 image. Other strides take one strided view per tap.
#
# That is R*S + 3 launches, each a GEMM too small to fill a large GPU, and on a GPU the host's
# time per launch adds up to more than the arithmetic. So on a GPU the same sum runs as cuDNN
# runs it, in *one* kernel (``_implicit_gemm_kernel``): a program owns a tile of K' output
# channels by a run of output pixels, and its reduction loop walks the taps and, within a tap,
# the input channels, loading each (channels x pixels) operand tile straight from the input
# with its padding masked to zero, never a copied or lowered matrix.


def _stride_one(x: torch.Tensor, w: torch.Tensor, g: _Geometry, cd: ConvolutionDescriptor) -> torch.Tensor:
    """Stride 1: every tap's operand is a slice of one zero-padded (C, N*Hp*Wp) copy of the input."""
    (ph, pw), (dh, dw) = cd.pad, cd.dilation
    G, kg, cg = g.groups, g.kg, g.cg
    hp, wp = g.h + 2 * ph, g.w + 2 * pw
    span = g.n * hp * wp                                  # output pixels computed, the padded ones too
    tail = (g.r - 1) * dh * wp + (g.s - 1) * dw           # how far the last tap reads past them
    buf = x.new_zeros(g.c, span + tail)                   # (C, N*Hp*Wp + tail): the padded input, C first
    buf[:, :span].view(g.c, g.n, hp, wp)[:, :, ph:ph + g.h, pw:pw + g.w].copy_(x.transpose(0, 1))
    taps = _oriented(w, cd).reshape(G, kg, cg, g.r * g.s).permute(3, 0, 1, 2).contiguous()   # (RS, G, K', C')
    xg = buf.view(G, cg, span + tail)
    acc = x.new_empty(G, kg, span)                                                # (G, K', N*Hp*Wp)
    for i in range(g.r * g.s):
        off = (i // g.s) * dh * wp + (i % g.s) * dw
        operand = xg[:, :, off:off + span]                # (G, C', N*Hp*Wp): a view, unit column stride
        if i == 0:
            torch.matmul(taps[0], operand, out=acc)
        else:
            acc.baddbmm_(taps[i], operand)                # acc += W_tap @ x_tap, in place (beta = 1)
    y = _empty_like_format(x, (g.n, g.k, g.p, g.q))
    y.copy_(acc.view(g.k, g.n, hp, wp)[:, :, :g.p, :g.q].transpose(0, 1))
    return y


# --- one kernel (GPU) ------------------------------------------------------------------------------

if triton is not None:
    @triton.jit
    def _implicit_gemm_kernel(X, Wt, Y, NPQ, PQ, Q, CG, KG, H, W, R, S,
                              STRIDE_H, STRIDE_W, PAD_H, PAD_W, DIL_H, DIL_W,
                              sxn, sxc, sxh, sxw, swk, swc, swr, sws, syn, syk, syh, syw,
                              BLOCK_K: tl.constexpr, BLOCK_PIX: tl.constexpr, BLOCK_C: tl.constexpr,
                              FLIP: tl.constexpr, PRECISION: tl.constexpr):
        """y[n, k, p, q] for BLOCK_K output channels k of group program_id(2) and BLOCK_PIX output
        pixels j = (n, p, q):

            acc = 0                                         (BLOCK_K x BLOCK_PIX, FP32)
            for each tap (r, s), for each chunk of BLOCK_C input channels c:
                acc += w[k, c, r, s] @ x[n, c, p*stride - pad + r*dil, q*stride - pad + s*dil]
            y = acc                                         (0 where the input position is padding)
        """
        pid_pix, pid_k, grp = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        j = pid_pix * BLOCK_PIX + tl.arange(0, BLOCK_PIX)
        k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
        live_j, live_k = j < NPQ, k < KG
        n = j // PQ
        p = (j % PQ) // Q
        q = j % Q
        h0 = p * STRIDE_H - PAD_H
        w0 = q * STRIDE_W - PAD_W
        x_pix = X + n.to(tl.int64) * sxn + (grp * CG).to(tl.int64) * sxc          # (BLOCK_PIX,) pointers
        w_k = Wt + (grp * KG + k).to(tl.int64) * swk                                # (BLOCK_K,) pointers
        cs = tl.arange(0, BLOCK_C)
        acc = tl.zeros((BLOCK_K, BLOCK_PIX), dtype=tl.float32)
        for r in range(R):
            h = h0 + r * DIL_H
            row_ok = live_j & (h >= 0) & (h < H)
            wr = (R - 1 - r) if FLIP else r                  # CONVOLUTION mode reads the filter flipped
            for s in range(S):
                wc = w0 + s * DIL_W
                ok = row_ok & (wc >= 0) & (wc < W)
                ws = (S - 1 - s) if FLIP else s
                xb = x_pix + h * sxh + wc * sxw
                wb = w_k + wr * swr + ws * sws
                for c0 in range(0, CG, BLOCK_C):
                    c = c0 + cs
                    c_ok = c < CG
                    a = tl.load(wb[:, None] + c[None, :] * swc, mask=live_k[:, None] & c_ok[None, :], other=0.0)
                    b = tl.load(xb[None, :] + c[:, None].to(tl.int64) * sxc, mask=c_ok[:, None] & ok[None, :],
                                other=0.0)
                    acc = tl.dot(a, b, acc, input_precision=PRECISION)
        out = (Y + (grp * KG + k)[:, None].to(tl.int64) * syk
               + (n.to(tl.int64) * syn + p * syh + q * syw)[None, :])
        tl.store(out, acc.to(Y.dtype.element_ty), mask=live_k[:, None] & live_j[None, :])


# (BLOCK_K, BLOCK_PIX, BLOCK_C, num_warps, num_stages): the first call of each problem times them all.
# The five that won somewhere among 11 tried on an H100 (FP32 and TF32; C = K = 64-256, 14x14-128x128).
_IMPLICIT_TILES = ((128, 128, 16, 8, 3), (128, 128, 32, 8, 3), (128, 64, 32, 4, 3), (64, 256, 16, 8, 3),
          (64, 128, 32, 4, 3))
_IMPLICIT_INTERPRETER_TILES = (32, 32, 16, 4, 1)      # the interpreter runs programs one by one: few, large ones
_IMPLICIT_CHOSEN: dict[tuple, tuple] = {}
_IMPLICIT_RELAUNCH = Relauncher(_implicit_gemm_kernel) if triton is not None else None


def _implicit_gemm_uses_kernel(x: torch.Tensor) -> bool:
    return triton is not None and compiled_for(x) and x.dtype in (torch.float32, torch.float16, torch.bfloat16)


def _launch_implicit_gemm(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, g: _Geometry, cd: ConvolutionDescriptor,
            tiles: tuple, precision: str) -> None:
    bk, bpix, bc, warps, stages = tiles
    npq = g.n * g.p * g.q
    grid = (-(-npq // bpix), -(-g.kg // bk), g.groups)
    sr, ss, sc, sk = w.stride()              # w is (R, S, C', K): a tile of filter values is a run of k
    args = (x, w, y, npq, g.p * g.q, g.q, g.cg, g.kg, g.h, g.w, g.r, g.s, *cd.stride, *cd.pad, *cd.dilation,
            *x.stride(), sk, sc, sr, ss, *y.stride())
    meta = dict(BLOCK_K=bk, BLOCK_PIX=bpix, BLOCK_C=bc, FLIP=cd.mode is Mode.CONVOLUTION, PRECISION=precision,
                num_warps=warps, num_stages=stages)
    _IMPLICIT_RELAUNCH.launch(grid, args, meta, (tiles, precision, meta["FLIP"], x.get_device() if x.is_cuda else -1))


def _implicit_gemm_one_kernel(x: torch.Tensor, w: torch.Tensor, g: _Geometry, cd: ConvolutionDescriptor) -> torch.Tensor:
    """The whole convolution in one launch of ``_implicit_gemm_kernel``; the first call of each
    problem shape, dtype and format times every ``_IMPLICIT_TILES`` and keeps the fastest."""
    y = _empty_like_format(x, (g.n, g.k, g.p, g.q))
    w = w.permute(2, 3, 1, 0).contiguous()   # (R, S, C', K): the filter loads of a program read along k
    precision = input_precision(x.dtype)     # FP32 in true FP32 unless TF32 is allowed (TENSOR_OP_MATH)
    tiles = None
    if x.is_cuda:
        key = (tuple(x.shape), tuple(x.stride()), tuple(w.shape), cd, x.dtype, precision, x.get_device())
        tiles = _IMPLICIT_CHOSEN.get(key)
        if tiles is None:
            tiles = _IMPLICIT_CHOSEN[key] = fastest(_IMPLICIT_TILES, lambda t: _launch_implicit_gemm(x, w, y, g, cd, t, precision))
    _launch_implicit_gemm(x, w, y, g, cd, tiles or _IMPLICIT_INTERPRETER_TILES, precision)
    return y


# --- the algorithm ------------------------------------------------------------------------------------

@reference
def conv_implicit_gemm(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """The GEMM of im2col with its C*R*S reduction split by filter tap: for each (r, s), the
    input pixels that tap reads form a *view* of the input, multiplied by the tap's (K, C)
    slice of the filter and added into the output. No lowered matrix.

    Stride 1 (the common case): the taps' operands are slices of one zero-padded copy of the
    input, and the R*S GEMMs accumulate in place into an output computed at the padded width
    (see the module docstring). Other strides: one strided view per tap and image, each
    product added into the output (a temporary of at most the output's size per tap).
    On a GPU (FP32, FP16, BF16) the same sum runs as one kernel (see the module docstring).
    """
    g = _geometry(x, w, conv_desc)
    if _implicit_gemm_uses_kernel(x):
        return _implicit_gemm_one_kernel(x, w, g, conv_desc)
    if conv_desc.stride == (1, 1):
        return _stride_one(x, w, g, conv_desc)
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


# === 4. FFT =======================================================================================

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


# === 5. Winograd F(2x2, 3x3) (WINOGRAD) ===========================================================

# Winograd F(2x2, 3x3) (cuDNN's WINOGRAD, non-fused): 16 multiplies per 2x2 output tile instead of 36.
#
# 3x3 filters, stride 1, no dilation; anything else is NOT_SUPPORTED.
#
# Non-fused Winograd is four steps, each one pass over a whole tensor, as cuDNN's
# WINOGRAD_NONFUSED runs them:
#
# 1. filters: ``U = G g G^T`` for every (k, c), one GEMM ``(G kron G) (16, 9) @ g (9, K*C')``;
# 2. input: ``V = B^T d B`` for every overlapping 4x4 tile ``d`` (tiles 2 apart) of every channel;
# 3. the products: at each of the 16 positions of a tile, ``M = U @ V`` summed over channels,
#    one batched GEMM of 16 (K', C') @ (C', T) products (T = N * ceil(P/2) * ceil(Q/2) tiles);
# 4. output: ``Y = A^T M A`` for every tile, written into the 2x2 outputs it covers.
#
# The transforms only add and subtract. On a GPU steps 2 and 4 are one elementwise Triton
# kernel each (a program reads its tiles' 16 values, combines them in registers, writes 16,
# resp. 4, values); elsewhere they are large GEMMs with the 16x16 (``B^T kron B^T``) and 4x16
# (``A^T kron A^T``) transform matrices over all tiles at once, never batches of 4x4 products.


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


def _winograd_matrices(like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return tuple(torch.tensor(m, dtype=like.dtype, device=like.device)
                 for m in (WINOGRAD_BT, WINOGRAD_G, WINOGRAD_AT))


_KRON: dict[tuple[torch.dtype, torch.device], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}


def _transform_matrices(dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``B^T kron B^T`` (16, 16), ``G kron G`` (16, 9) and ``A^T kron A^T`` (4, 16), made once per
    dtype and device: building them on every call would copy from the host each time, and a
    copy from pageable host memory waits for the GPU to finish its queue."""
    found = _KRON.get((dtype, device))
    if found is None:
        bt, gm, at = (torch.tensor(m, dtype=dtype) for m in (WINOGRAD_BT, WINOGRAD_G, WINOGRAD_AT))
        found = _KRON[(dtype, device)] = tuple(torch.kron(m, m).to(device) for m in (bt, gm, at))
    return found


@reference
def winograd_1d(d: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """F(2, 3): the two outputs ``y[i] = d[i]*g[0] + d[i+1]*g[1] + d[i+2]*g[2]`` (i = 0, 1) of a
    4-input tile ``d`` and a 3-tap filter ``g``, with 4 multiplies: ``A^T [(G g) * (B^T d)]``."""
    d, g = torch.as_tensor(d), torch.as_tensor(g)
    bt, gm, at = _winograd_matrices(d.to(_compute_dtype(d.dtype)))
    return at @ ((gm @ g.to(bt.dtype)) * (bt @ d.to(bt.dtype)))


# --- the transforms as GEMMs over every tile at once (any device) ----------------------------------

def _filter_transform(w: torch.Tensor, g: _Geometry, ct: torch.dtype) -> torch.Tensor:
    """U = G g G^T for all K x C' filters: ``(G kron G) (16, 9) @ w (9, K*C')`` -> (16, G, K', C')."""
    gg = _transform_matrices(ct, w.device)[1]                                 # (16, 9)
    return (gg @ w.to(ct).reshape(g.k * g.cg, 9).T).view(16, g.groups, g.kg, g.cg)


def _input_transform_gemm(x: torch.Tensor, g: _Geometry, ph: int, pw: int, tp: int, tq: int,
                          ct: torch.dtype) -> torch.Tensor:
    """V = B^T d B for every tile: gather the overlapping 4x4 tiles as a (16, C*T) matrix (one
    copy of a strided view), then ``(B^T kron B^T) (16, 16) @ tiles`` -> (16, G, C', T)."""
    btbt = _transform_matrices(ct, x.device)[0]                               # (16, 16)
    # zero padding, plus a row/column more when P or Q is odd so that the last tile is whole
    xp = _padded(x.to(ct), ph, pw, 2 * tp + 2 - (g.h + 2 * ph), 2 * tq + 2 - (g.w + 2 * pw))
    sn, sc, sh, sw = xp.stride()
    tiles = xp.as_strided((4, 4, g.c, g.n, tp, tq), (sh, sw, sc, sn, 2 * sh, 2 * sw))    # a view
    d = tiles.reshape(16, g.c * g.n * tp * tq)                                # the one copy
    return (btbt @ d).view(16, g.groups, g.cg, g.n * tp * tq)


def _output_transform_gemm(m: torch.Tensor, g: _Geometry, tp: int, tq: int, like: torch.Tensor) -> torch.Tensor:
    """Y = A^T M A for every tile: ``(A^T kron A^T) (4, 16) @ M (16, K*T)``, then each tile's
    2x2 outputs copied to their place, cropped to P x Q, in ``like``'s dtype and format."""
    atat = _transform_matrices(m.dtype, m.device)[2]                          # (4, 16)
    y4 = (atat @ m.reshape(16, -1)).view(2, 2, g.k, g.n, tp, tq)
    y = _empty_like_format(like, (g.n, g.k, g.p, g.q))
    full = y if (2 * tp, 2 * tq) == (g.p, g.q) else y.new_empty(g.n, g.k, 2 * tp, 2 * tq)
    full.view(g.n, g.k, tp, 2, tq, 2).permute(3, 5, 1, 0, 2, 4).copy_(y4)       # (a, b, k, n, tp, tq)
    if full is not y:
        y.copy_(full[:, :, :g.p, :g.q])
    return y


# --- the transforms as one elementwise kernel each (GPU) ----------------------------------------

if triton is not None:
    @triton.jit
    def _winograd_input_kernel(X, V, C, H, W, TQ, TPQ, T, PAD_H, PAD_W, sxn, sxc, sxh, sxw,
                               BLOCK_T: tl.constexpr):
        """V[(i, j), c, t] = (B^T d B)[i, j] for tile t of channel c: 16 loads, 16 stores."""
        t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
        c = tl.program_id(1)
        live = t < T
        n = t // TPQ
        rest = t % TPQ
        h0 = 2 * (rest // TQ) - PAD_H
        w0 = 2 * (rest % TQ) - PAD_W
        base = X + n.to(tl.int64) * sxn + c.to(tl.int64) * sxc
        ty = V.dtype.element_ty
        h1, h2, h3 = h0 + 1, h0 + 2, h0 + 3
        w1, w2, w3 = w0 + 1, w0 + 2, w0 + 3
        r0 = live & (h0 >= 0) & (h0 < H)
        r1 = live & (h1 >= 0) & (h1 < H)
        r2 = live & (h2 >= 0) & (h2 < H)
        r3 = live & (h3 >= 0) & (h3 < H)
        c0 = (w0 >= 0) & (w0 < W)
        c1 = (w1 >= 0) & (w1 < W)
        c2 = (w2 >= 0) & (w2 < W)
        c3 = (w3 >= 0) & (w3 < W)
        d00 = tl.load(base + h0 * sxh + w0 * sxw, mask=r0 & c0, other=0.0).to(ty)
        d01 = tl.load(base + h0 * sxh + w1 * sxw, mask=r0 & c1, other=0.0).to(ty)
        d02 = tl.load(base + h0 * sxh + w2 * sxw, mask=r0 & c2, other=0.0).to(ty)
        d03 = tl.load(base + h0 * sxh + w3 * sxw, mask=r0 & c3, other=0.0).to(ty)
        d10 = tl.load(base + h1 * sxh + w0 * sxw, mask=r1 & c0, other=0.0).to(ty)
        d11 = tl.load(base + h1 * sxh + w1 * sxw, mask=r1 & c1, other=0.0).to(ty)
        d12 = tl.load(base + h1 * sxh + w2 * sxw, mask=r1 & c2, other=0.0).to(ty)
        d13 = tl.load(base + h1 * sxh + w3 * sxw, mask=r1 & c3, other=0.0).to(ty)
        d20 = tl.load(base + h2 * sxh + w0 * sxw, mask=r2 & c0, other=0.0).to(ty)
        d21 = tl.load(base + h2 * sxh + w1 * sxw, mask=r2 & c1, other=0.0).to(ty)
        d22 = tl.load(base + h2 * sxh + w2 * sxw, mask=r2 & c2, other=0.0).to(ty)
        d23 = tl.load(base + h2 * sxh + w3 * sxw, mask=r2 & c3, other=0.0).to(ty)
        d30 = tl.load(base + h3 * sxh + w0 * sxw, mask=r3 & c0, other=0.0).to(ty)
        d31 = tl.load(base + h3 * sxh + w1 * sxw, mask=r3 & c1, other=0.0).to(ty)
        d32 = tl.load(base + h3 * sxh + w2 * sxw, mask=r3 & c2, other=0.0).to(ty)
        d33 = tl.load(base + h3 * sxh + w3 * sxw, mask=r3 & c3, other=0.0).to(ty)
        # B^T d: rows (d0 - d2, d1 + d2, d2 - d1, d1 - d3), column by column
        e00, e01, e02, e03 = d00 - d20, d01 - d21, d02 - d22, d03 - d23
        e10, e11, e12, e13 = d10 + d20, d11 + d21, d12 + d22, d13 + d23
        e20, e21, e22, e23 = d20 - d10, d21 - d11, d22 - d12, d23 - d13
        e30, e31, e32, e33 = d10 - d30, d11 - d31, d12 - d32, d13 - d33
        # (B^T d) B: the same combination of columns, row by row
        out = V + c.to(tl.int64) * T + t
        step = C.to(tl.int64) * T                     # from one of the 16 positions to the next
        tl.store(out + 0 * step, e00 - e02, mask=live)
        tl.store(out + 1 * step, e01 + e02, mask=live)
        tl.store(out + 2 * step, e02 - e01, mask=live)
        tl.store(out + 3 * step, e01 - e03, mask=live)
        tl.store(out + 4 * step, e10 - e12, mask=live)
        tl.store(out + 5 * step, e11 + e12, mask=live)
        tl.store(out + 6 * step, e12 - e11, mask=live)
        tl.store(out + 7 * step, e11 - e13, mask=live)
        tl.store(out + 8 * step, e20 - e22, mask=live)
        tl.store(out + 9 * step, e21 + e22, mask=live)
        tl.store(out + 10 * step, e22 - e21, mask=live)
        tl.store(out + 11 * step, e21 - e23, mask=live)
        tl.store(out + 12 * step, e30 - e32, mask=live)
        tl.store(out + 13 * step, e31 + e32, mask=live)
        tl.store(out + 14 * step, e32 - e31, mask=live)
        tl.store(out + 15 * step, e31 - e33, mask=live)

    @triton.jit
    def _winograd_output_kernel(M, Y, K, P, Q, TQ, TPQ, T, syn, syk, syh, syw, BLOCK_T: tl.constexpr):
        """y[n, k, 2tp + a, 2tq + b] = (A^T m A)[a, b] for tile t of output channel k: 16 loads, 4 stores."""
        t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
        k = tl.program_id(1)
        live = t < T
        src = M + k.to(tl.int64) * T + t
        step = K.to(tl.int64) * T
        m00 = tl.load(src + 0 * step, mask=live, other=0.0)
        m01 = tl.load(src + 1 * step, mask=live, other=0.0)
        m02 = tl.load(src + 2 * step, mask=live, other=0.0)
        m03 = tl.load(src + 3 * step, mask=live, other=0.0)
        m10 = tl.load(src + 4 * step, mask=live, other=0.0)
        m11 = tl.load(src + 5 * step, mask=live, other=0.0)
        m12 = tl.load(src + 6 * step, mask=live, other=0.0)
        m13 = tl.load(src + 7 * step, mask=live, other=0.0)
        m20 = tl.load(src + 8 * step, mask=live, other=0.0)
        m21 = tl.load(src + 9 * step, mask=live, other=0.0)
        m22 = tl.load(src + 10 * step, mask=live, other=0.0)
        m23 = tl.load(src + 11 * step, mask=live, other=0.0)
        m30 = tl.load(src + 12 * step, mask=live, other=0.0)
        m31 = tl.load(src + 13 * step, mask=live, other=0.0)
        m32 = tl.load(src + 14 * step, mask=live, other=0.0)
        m33 = tl.load(src + 15 * step, mask=live, other=0.0)
        # A^T m: rows (m0 + m1 + m2, m1 - m2 - m3), column by column; then the same on columns
        s00, s01, s02, s03 = m00 + m10 + m20, m01 + m11 + m21, m02 + m12 + m22, m03 + m13 + m23
        s10, s11, s12, s13 = m10 - m20 - m30, m11 - m21 - m31, m12 - m22 - m32, m13 - m23 - m33
        n = t // TPQ
        rest = t % TPQ
        p0 = 2 * (rest // TQ)
        q0 = 2 * (rest % TQ)
        dst = Y + n.to(tl.int64) * syn + k.to(tl.int64) * syk + p0 * syh + q0 * syw
        ty = Y.dtype.element_ty
        down = live & (p0 + 1 < P)
        right = q0 + 1 < Q
        tl.store(dst, (s00 + s01 + s02).to(ty), mask=live)
        tl.store(dst + syw, (s01 - s02 - s03).to(ty), mask=live & right)
        tl.store(dst + syh, (s10 + s11 + s12).to(ty), mask=down)
        tl.store(dst + syh + syw, (s11 - s12 - s13).to(ty), mask=down & right)


_BLOCK_T = 256


def _use_kernels(x: torch.Tensor) -> bool:
    return triton is not None and compiled_for(x)


def _input_transform_kernel(x: torch.Tensor, g: _Geometry, ph: int, pw: int, tp: int, tq: int,
                            ct: torch.dtype) -> torch.Tensor:
    t = g.n * tp * tq
    v = torch.empty(16, g.c, t, dtype=ct, device=x.device)
    _winograd_input_kernel[(triton.cdiv(t, _BLOCK_T), g.c)](
        x, v, g.c, g.h, g.w, tq, tp * tq, t, ph, pw, *x.stride(), BLOCK_T=_BLOCK_T, num_warps=4)
    return v.view(16, g.groups, g.cg, t)


def _output_transform_kernel(m: torch.Tensor, g: _Geometry, tp: int, tq: int, like: torch.Tensor) -> torch.Tensor:
    t = g.n * tp * tq
    y = _empty_like_format(like, (g.n, g.k, g.p, g.q))
    _winograd_output_kernel[(triton.cdiv(t, _BLOCK_T), g.k)](
        m, y, g.k, g.p, g.q, tq, tp * tq, t, *y.stride(), BLOCK_T=_BLOCK_T, num_warps=4)
    return y


@reference
def conv_winograd(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """Winograd F(2x2, 3x3), non-fused: transform the filters (U = G g G^T, 4x4 each) and
    the input's overlapping 4x4 tiles (V = B^T d B, tiles 2 apart), multiply and sum over
    channels at each of the 16 positions (one batched GEMM of 16), transform back (Y = A^T M A).
    The transforms run over all tiles at once: one elementwise kernel each on a GPU, large
    GEMMs elsewhere. 3x3 filters, stride 1, no dilation: anything else raises ``NotSupportedError``."""
    status, reason = _support(Algo.WINOGRAD, conv_desc, (w.shape[2], w.shape[3]))
    if status is not Status.SUCCESS:
        raise NotSupportedError(reason)
    g = _geometry(x, w, conv_desc)
    ph, pw = conv_desc.pad
    tp, tq = -(-g.p // 2), -(-g.q // 2)                         # tiles down and across
    ct = _compute_dtype(x.dtype)
    u = _filter_transform(_oriented(w, conv_desc), g, ct)        # (16, G, K', C')
    kernels = _use_kernels(x)
    v = (_input_transform_kernel if kernels else _input_transform_gemm)(x, g, ph, pw, tp, tq, ct)   # (16, G, C', T)
    m = torch.matmul(u, v)                                       # (16, G, K', T): 16 x G GEMMs in one call
    return (_output_transform_kernel if kernels else _output_transform_gemm)(m, g, tp, tq, x)


# === 5. the forward call (cudnnConvolutionForward) and 6. workspaces ==============================

ALGORITHMS: dict[Algo, Callable[..., torch.Tensor]] = {
    Algo.DIRECT: conv_direct,
    Algo.GEMM: conv_im2col,
    Algo.IMPLICIT_GEMM: conv_implicit_gemm,
    Algo.FFT: conv_fft,
    Algo.WINOGRAD: conv_winograd,
}


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
    data = int(hardware.bytes_per_element(x_desc.dtype))
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
    if not layout_of(out).is_non_overlapping():
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


_DTYPE_OF = {4: "fp32", 8: "fp64"}


@reference
def workspace_bytes(algo: Any, x_shape: Sequence[int], w_shape: Sequence[int], pad: int, stride: int, dilation: int,
                    groups: int, bytes_per_element: int) -> int:
    """``workspace_size`` with the exercise's plain arguments: shapes (N, C, H, W) and
    (K, C/groups, R, S), FP32 (4 bytes) or FP64 (8)."""
    cd = ConvolutionDescriptor(pad, stride, dilation, groups=groups)
    dt = _DTYPE_OF[bytes_per_element]
    return workspace_size(algo, TensorDescriptor(dt, tuple(x_shape)), FilterDescriptor(dt, "NCHW", *w_shape), cd)


# === 7. find ======================================================================================

@reference
def find(candidates: Sequence[Any], timer: Callable = timing.measure, workspace_limit: int | None = None) -> list:
    """The exercise: records (name, status, seconds, workspace bytes) of every candidate, the
    successes (each timed once, its median) by increasing time, then the others (NOT_SUPPORTED,
    ALLOC_FAILED over ``workspace_limit``; not run, time inf) in the order given."""
    ran, others = [], []
    for c in candidates:
        if not c.supported:
            others.append((c.name, "NOT_SUPPORTED", math.inf, c.workspace))
        elif workspace_limit is not None and c.workspace > workspace_limit:
            others.append((c.name, "ALLOC_FAILED", math.inf, c.workspace))
        else:
            ran.append((c.name, "SUCCESS", timer(c.run).median, c.workspace))
    return sorted(ran, key=lambda rec: rec[2]) + others


@reference
def find_records(rows: Sequence[Sequence[Any]], workspace_limit: int | None) -> dict[str, list]:
    """``find`` on the check's fake candidates and timer made from ``rows`` (name, times,
    workspace, supported): {"records": its records, "timed": the candidates it timed}."""
    from gpudl.grading.lab05 import _Bench

    fake = _Bench({name: tuple(times) for name, times, _, _ in rows})
    candidates = [fake.candidate(name, ok, mem) for name, _, mem, ok in rows]
    records = find(candidates, fake.timer, workspace_limit)
    return {"records": records, "timed": list(fake.timed)}


def find_algorithms(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor,
                    algos: Sequence[Any] | None = None, *, workspace_limit: int | None = None,
                    requested: int | None = None, timer: Callable[..., timing.Measurement] | None = None,
                    **timer_kwargs: Any) -> list[AlgoPerf]:
    """``cudnnFindConvolutionForwardAlgorithm``: run every candidate, time it, rank.

    Candidates (default: GEMM, IMPLICIT_GEMM, FFT, WINOGRAD; DIRECT is the slow reference) that
    cannot do this convolution are reported NOT_SUPPORTED, those needing more workspace than
    ``workspace_limit`` bytes ALLOC_FAILED, without running. The others are timed by ``timer``
    (default ``gpudl.timing.measure`` on the tensors' device: warm-up, CUDA events on a GPU) with
    the workspace allocated beforehand. Returns the successes by increasing median time, then
    the rest; at most ``requested`` rows.
    """
    x_desc, w_desc = TensorDescriptor.from_tensor(x), FilterDescriptor(w.dtype, "NCHW", *w.shape)
    output_dims(x_desc, w_desc, conv_desc)
    if timer is None:
        device = "cuda" if x.is_cuda else "cpu"
        timer = lambda fn, **kw: timing.measure(fn, device=device, **kw)   # noqa: E731
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


# === the backward passes ==========================================================================

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
