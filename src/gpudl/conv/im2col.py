"""im2col + GEMM (cuDNN's GEMM algorithm): lower the input into a matrix, then multiply.

Each output pixel reads a C*R*S patch of the input; writing the patches as the columns of a
(C*R*S, P*Q) matrix per image (the *workspace*, R*S times the input) turns the convolution
into one GEMM with the (K, C*R*S) filter matrix.

Public names, in order: ``im2col``, ``col2im``, ``conv_im2col``.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..references import reference
from .descriptors import ConvError, ConvolutionDescriptor
from .geometry import _empty_like_format, _geometry, _geometry_of, _Geometry, _is_nhwc, _oriented, _tap_range, _taps


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
