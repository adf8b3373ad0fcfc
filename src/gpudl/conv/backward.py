"""The backward passes (``cudnnConvolutionBackwardData`` and ``...Filter``), and forward/backward with a cache.

Public names, in order: ``BACKWARD_ALGOS``, ``conv_backward_data``, ``conv_backward_filter``,
``forward``, ``backward``.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from .algorithms import _blend, conv_forward
from .descriptors import Algo, ConvError, ConvolutionDescriptor, NotSupportedError, _algo
from .geometry import _geometry_of, _Geometry, _in_format, _oriented, _padded, _taps
from .im2col import _lower_into, col2im

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
