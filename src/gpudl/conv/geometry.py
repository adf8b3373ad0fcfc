"""The index arithmetic the algorithms share: a problem's sizes, its filter taps, its storage format.

No public names. ``_Geometry`` holds N, C, H, W, K, R, S, P, Q and groups of one checked
problem; ``_taps`` yields, for each filter tap (r, s), the output pixels it touches and the
input pixels it reads, as slices; ``_is_nhwc`` and ``_in_format`` keep an output in its
input's format; ``_oriented`` flips the filter in CONVOLUTION mode; ``_padded`` zero-pads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import torch

from .. import layout
from .descriptors import ConvError, ConvolutionDescriptor, FilterDescriptor, Mode, TensorDescriptor, output_dims


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


def _padded(x: torch.Tensor, ph: int, pw: int, extra_h: int = 0, extra_w: int = 0) -> torch.Tensor:
    n, c, h, w = x.shape
    xp = x.new_zeros(n, c, h + 2 * ph + extra_h, w + 2 * pw + extra_w)
    xp[:, :, ph:ph + h, pw:pw + w].copy_(x)
    return xp
