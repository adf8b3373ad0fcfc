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

That is R*S + 3 launches, each a GEMM too small to fill a large GPU, and on a GPU the host's
time per launch adds up to more than the arithmetic. So on a GPU the same sum runs as cuDNN
runs it, in *one* kernel (``_implicit_gemm_kernel``): a program owns a tile of K' output
channels by a run of output pixels, and its reduction loop walks the taps and, within a tap,
the input channels, loading each (channels x pixels) operand tile straight from the input
with its padding masked to zero, never a copied or lowered matrix.

Public names: ``conv_implicit_gemm``.
"""
from __future__ import annotations

import torch

from .._launch import Relauncher, compiled_for, fastest, input_precision
from ..references import reference
from .descriptors import ConvolutionDescriptor, Mode
from .geometry import _empty_like_format, _geometry, _Geometry, _is_nhwc, _oriented, _taps

try:        # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
    import triton
    import triton.language as tl
except ImportError:                     # the torch path needs no Triton
    triton = None


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
_TILES = ((128, 128, 16, 8, 3), (128, 128, 32, 8, 3), (128, 64, 32, 4, 3), (64, 256, 16, 8, 3),
          (64, 128, 32, 4, 3))
_INTERPRETER_TILES = (32, 32, 16, 4, 1)      # the interpreter runs programs one by one: few, large ones
_CHOSEN: dict[tuple, tuple] = {}
_RELAUNCH = Relauncher(_implicit_gemm_kernel) if triton is not None else None


def _use_kernel(x: torch.Tensor) -> bool:
    return triton is not None and compiled_for(x) and x.dtype in (torch.float32, torch.float16, torch.bfloat16)


def _launch(x: torch.Tensor, w: torch.Tensor, y: torch.Tensor, g: _Geometry, cd: ConvolutionDescriptor,
            tiles: tuple, precision: str) -> None:
    bk, bpix, bc, warps, stages = tiles
    npq = g.n * g.p * g.q
    grid = (-(-npq // bpix), -(-g.kg // bk), g.groups)
    sr, ss, sc, sk = w.stride()              # w is (R, S, C', K): a tile of filter values is a run of k
    args = (x, w, y, npq, g.p * g.q, g.q, g.cg, g.kg, g.h, g.w, g.r, g.s, *cd.stride, *cd.pad, *cd.dilation,
            *x.stride(), sk, sc, sr, ss, *y.stride())
    meta = dict(BLOCK_K=bk, BLOCK_PIX=bpix, BLOCK_C=bc, FLIP=cd.mode is Mode.CONVOLUTION, PRECISION=precision,
                num_warps=warps, num_stages=stages)
    _RELAUNCH.launch(grid, args, meta, (tiles, precision, meta["FLIP"], x.get_device() if x.is_cuda else -1))


def _one_kernel(x: torch.Tensor, w: torch.Tensor, g: _Geometry, cd: ConvolutionDescriptor) -> torch.Tensor:
    """The whole convolution in one launch of ``_implicit_gemm_kernel``; the first call of each
    problem shape, dtype and format times every ``_TILES`` and keeps the fastest."""
    y = _empty_like_format(x, (g.n, g.k, g.p, g.q))
    w = w.permute(2, 3, 1, 0).contiguous()   # (R, S, C', K): the filter loads of a program read along k
    precision = input_precision(x.dtype)     # FP32 in true FP32 unless TF32 is allowed (TENSOR_OP_MATH)
    tiles = None
    if x.is_cuda:
        key = (tuple(x.shape), tuple(x.stride()), tuple(w.shape), cd, x.dtype, precision, x.get_device())
        tiles = _CHOSEN.get(key)
        if tiles is None:
            tiles = _CHOSEN[key] = fastest(_TILES, lambda t: _launch(x, w, y, g, cd, t, precision))
    _launch(x, w, y, g, cd, tiles or _INTERPRETER_TILES, precision)
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
    if _use_kernel(x):
        return _one_kernel(x, w, g, conv_desc)
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
