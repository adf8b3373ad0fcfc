"""Implicit GEMM (cuDNN's IMPLICIT_GEMM): the GEMM of im2col without the lowered matrix.

Public names: ``conv_implicit_gemm``.
"""
from __future__ import annotations

import torch

from ..references import reference
from .descriptors import ConvolutionDescriptor
from .geometry import _empty_like_format, _geometry, _is_nhwc, _oriented, _taps


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
