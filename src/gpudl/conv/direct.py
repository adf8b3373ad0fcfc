"""The reference: the convolution as defined, one output pixel at a time (cuDNN's DIRECT).

Public names: ``conv_direct``.
"""
from __future__ import annotations

import torch

from ..references import reference
from .descriptors import ConvolutionDescriptor
from .geometry import _geometry, _in_format, _oriented, _padded


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
