"""FFT convolution (cuDNN's FFT): pointwise products of spectra, stride 1 only.

Public names: ``conv_fft``.
"""
from __future__ import annotations

import torch

from ..references import reference
from .descriptors import Algo, ConvolutionDescriptor, NotSupportedError, Status, _support
from .geometry import _compute_dtype, _geometry, _Geometry, _in_format, _oriented, _padded


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
