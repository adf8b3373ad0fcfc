"""Winograd F(2x2, 3x3) (cuDNN's WINOGRAD, non-fused): 16 multiplies per 2x2 output tile instead of 36.

3x3 filters, stride 1, no dilation; anything else is NOT_SUPPORTED.

Non-fused Winograd is four steps, each one pass over a whole tensor, as cuDNN's
WINOGRAD_NONFUSED runs them:

1. filters: ``U = G g G^T`` for every (k, c), one GEMM ``(G kron G) (16, 9) @ g (9, K*C')``;
2. input: ``V = B^T d B`` for every overlapping 4x4 tile ``d`` (tiles 2 apart) of every channel;
3. the products: at each of the 16 positions of a tile, ``M = U @ V`` summed over channels,
   one batched GEMM of 16 (K', C') @ (C', T) products (T = N * ceil(P/2) * ceil(Q/2) tiles);
4. output: ``Y = A^T M A`` for every tile, written into the 2x2 outputs it covers.

The transforms only add and subtract. On a GPU steps 2 and 4 are one elementwise Triton
kernel each (a program reads its tiles' 16 values, combines them in registers, writes 16,
resp. 4, values); elsewhere they are large GEMMs with the 16x16 (``B^T kron B^T``) and 4x16
(``A^T kron A^T``) transform matrices over all tiles at once, never batches of 4x4 products.

Public names, in order: ``WINOGRAD_BT``, ``WINOGRAD_G``, ``WINOGRAD_AT``, ``winograd_1d``,
``conv_winograd``.
"""
from __future__ import annotations

import torch

from .._launch import compiled_for
from ..references import reference
from .descriptors import Algo, ConvolutionDescriptor, NotSupportedError, Status, _support
from .geometry import _compute_dtype, _empty_like_format, _geometry, _Geometry, _oriented, _padded

try:        # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
    import triton
    import triton.language as tl
except ImportError:                     # the torch path needs no Triton
    triton = None


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
