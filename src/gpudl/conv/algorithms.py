"""The forward algorithms as cuDNN offers them: the table, their workspaces, and ``conv_forward``.

Public names, in order: ``ALGORITHMS``, ``workspace_size``, ``conv_forward``.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch

from .. import layout
from ..hardware import bytes_per_element
from ..references import reference
from .descriptors import (Algo, ConvError, ConvolutionDescriptor, FilterDescriptor, MathType, NotSupportedError,
                          Status, TensorDescriptor, _algo, _support, output_dims)
from .direct import conv_direct
from .fft import conv_fft
from .geometry import _geometry
from .im2col import conv_im2col
from .implicit_gemm import conv_implicit_gemm
from .winograd import conv_winograd

ALGORITHMS: dict[Algo, Callable[..., torch.Tensor]] = {
    Algo.DIRECT: conv_direct,
    Algo.GEMM: conv_im2col,
    Algo.IMPLICIT_GEMM: conv_implicit_gemm,
    Algo.FFT: conv_fft,
    Algo.WINOGRAD: conv_winograd,
}



@reference
def workspace_size(algo: Any, x_desc: TensorDescriptor, w_desc: FilterDescriptor,
                   conv_desc: ConvolutionDescriptor) -> int:
    """Bytes of workspace ``algo`` needs (``cudnnGetConvolutionForwardWorkspaceSize``), in
    elements of the compute dtype (FP32 for FP16/BF16/FP32 data in FFT and Winograd):

    - DIRECT, IMPLICIT_GEMM: 0;
    - GEMM: the lowered batch, ``N * C*R*S * P*Q`` elements. Seed 001's case read as one
      128-channel 128x128 image, 3x3, FP32: 128*9*128*128*4 B = 72 MiB, its 72 MB (11x11: 968 MiB);
    - FFT: the spectra of the input, the filters and the output, ``(N*C + K*C' + N*K) * Hf*(Wf//2+1)``
      complex values (2 elements each), Hf x Wf the padded input;
    - WINOGRAD: what the non-fused algorithm keeps between its kernels, with T = N*ceil(P/2)*ceil(Q/2)
      tiles: V (16*C*T), U (16*K*C') and M (16*K*T).
    """
    a = _algo(algo)
    n, k, p, q = output_dims(x_desc, w_desc, conv_desc)
    status, reason = _support(a, conv_desc, (w_desc.r, w_desc.s))
    if status is not Status.SUCCESS:
        raise NotSupportedError(reason)
    c, cg, r, s = x_desc.dims[1], w_desc.c, w_desc.r, w_desc.s
    data = int(bytes_per_element(x_desc.dtype))
    compute = 8 if x_desc.dtype == "fp64" else 4
    if a in (Algo.DIRECT, Algo.IMPLICIT_GEMM):
        return 0
    if a is Algo.GEMM:
        return n * c * r * s * p * q * data
    if a is Algo.FFT:
        hf, wf = x_desc.dims[2] + 2 * conv_desc.pad[0], x_desc.dims[3] + 2 * conv_desc.pad[1]
        return (n * c + k * cg + n * k) * hf * (wf // 2 + 1) * 2 * compute
    tiles = n * -(-p // 2) * -(-q // 2)
    return 16 * (c * tiles + k * cg + k * tiles) * compute


# --- the forward call -----------------------------------------------------------------------------

@contextlib.contextmanager
def _math(cd: ConvolutionDescriptor, device: torch.device) -> Iterator[None]:
    """On a GPU, TENSOR_OP_MATH lets FP32 GEMMs use TF32 tensor cores and the other math types
    forbid it, for the duration of the call. A CPU has no TF32: nothing changes there."""
    if device.type != "cuda":
        yield
        return
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = cd.math_type is MathType.TENSOR_OP_MATH
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def _blend(result: torch.Tensor, alpha: float, beta: float, out: torch.Tensor | None, what: str) -> torch.Tensor:
    """``out = alpha * result + beta * out`` as cuDNN blends (out is not read when beta == 0)."""
    if out is None:
        if beta != 0:
            raise ConvError(f"beta={beta} blends with the prior {what}: pass it (the `y=` tensor)")
        return result if alpha == 1 else result * alpha
    if tuple(out.shape) != tuple(result.shape):
        raise ConvError(f"the given {what} has shape {tuple(out.shape)}, expected {tuple(result.shape)}")
    if out.dtype != result.dtype or out.device != result.device:
        raise ConvError(f"the given {what} is {out.dtype} on {out.device}, expected {result.dtype} on {result.device}")
    if not layout.layout_of(out).is_non_overlapping():
        raise ConvError(f"the {what}'s strides {tuple(out.stride())} make elements overlap: cuDNN outputs may not")
    if beta == 0:
        out.copy_(result if alpha == 1 else result * alpha)
    else:
        out.mul_(beta).add_(result, alpha=alpha)
    return out


@reference
def conv_forward(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor, algo: Any = Algo.GEMM,
                 alpha: float = 1.0, beta: float = 0.0, y: torch.Tensor | None = None,
                 workspace: torch.Tensor | None = None) -> torch.Tensor:
    """``cudnnConvolutionForward``: ``y = alpha * conv(x, w) + beta * y`` with algorithm ``algo``.

    ``x`` is (N, C, H, W) in NCHW or NHWC memory, ``w`` (K, C/groups, R, S); ``y`` (optional)
    receives the result in its own format, otherwise a new tensor in ``x``'s format comes back.
    ``workspace`` (optional, GEMM only) is a uint8 tensor of at least ``workspace_size`` bytes.
    Raises ``ConvError`` for an impossible configuration and ``NotSupportedError`` when ``algo``
    cannot compute it.
    """
    a = _algo(algo)
    _geometry(x, w, conv_desc)
    status, reason = _support(a, conv_desc, (w.shape[2], w.shape[3]))
    if status is not Status.SUCCESS:
        raise NotSupportedError(reason)
    with _math(conv_desc, x.device):
        result = conv_im2col(x, w, conv_desc, workspace) if a is Algo.GEMM else ALGORITHMS[a](x, w, conv_desc)
    return _blend(result, alpha, beta, y, "output y")
