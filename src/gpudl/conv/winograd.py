"""Winograd F(2x2, 3x3) (cuDNN's WINOGRAD, non-fused): 16 multiplies per 2x2 output tile instead of 36.

3x3 filters, stride 1, no dilation; anything else is NOT_SUPPORTED.

Public names, in order: ``WINOGRAD_BT``, ``WINOGRAD_G``, ``WINOGRAD_AT``, ``winograd_1d``,
``conv_winograd``.
"""
from __future__ import annotations

import torch

from ..references import reference
from .descriptors import Algo, ConvolutionDescriptor, NotSupportedError, Status, _support
from .geometry import _compute_dtype, _geometry, _in_format, _oriented, _padded


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
