"""Implicit GEMM (cuDNN's IMPLICIT_GEMM): the GEMM of im2col without the lowered matrix.

The GEMM of im2col sums over C*R*S; split that sum by filter tap (r, s) and each tap's part is
a GEMM of the tap's (K', C') slice of the filter with the C' x (output pixels) input values
that tap reads, which is a *view* of the input, never a copy of R*S times the input.

With stride 1 the view is even simpler if the output is computed at the padded input's width:
output pixel ``j = n*Hp*Wp + p*Wp + q`` of a padded image, laid out channel by channel
(C, N*Hp*Wp), reads input ``j + r*dil_h*Wp + s*dil_w`` for tap (r, s). So each tap's operand
is a plain slice of one padded copy of the input, a matrix with unit column stride that a
GEMM reads in place, and the nine (R*S) GEMMs accumulate into one output (beta = 1). The
output's extra columns (q >= Q) and rows (p >= P) are computed and dropped: (Hp*Wp)/(P*Q)
times the work, 3% for a 128x128 image. Other strides take one strided view per tap.

Public names: ``conv_implicit_gemm``.
"""
from __future__ import annotations

import torch

from ..references import reference
from .descriptors import ConvolutionDescriptor
from .geometry import _empty_like_format, _geometry, _Geometry, _is_nhwc, _oriented, _taps


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


@reference
def conv_implicit_gemm(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor) -> torch.Tensor:
    """The GEMM of im2col with its C*R*S reduction split by filter tap: for each (r, s), the
    input pixels that tap reads form a *view* of the input, multiplied by the tap's (K, C)
    slice of the filter and added into the output. No lowered matrix.

    Stride 1 (the common case): the taps' operands are slices of one zero-padded copy of the
    input, and the R*S GEMMs accumulate in place into an output computed at the padded width
    (see the module docstring). Other strides: one strided view per tap and image, each
    product added into the output (a temporary of at most the output's size per tap).
    """
    g = _geometry(x, w, conv_desc)
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
