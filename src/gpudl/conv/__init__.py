"""cuDNN-like convolution: descriptors, forward algorithms and their workspaces, find, backward.

cuDNN (the lectures' walk-through and example) describes the input and output with
tensor descriptors (dtype, dims, strides), the weights with a filter descriptor (dtype,
format, K, C, R, S) and the operation with a convolution descriptor (pads, strides,
dilations, mode, compute type, groups, math type). It offers several forward algorithms
that compute the same result and trade speed for *workspace*, scratch memory the caller
allocates; ``cudnnFindConvolutionForwardAlgorithm`` runs each and returns them ranked by
time. Seed 001's table, 128x128x128x128 FP32 NCHW on a Quadro GV100, 3x3 filters: GEMM
0.76 ms with 72 MB of workspace, IMPLICIT_GEMM 0.62 ms with none, FFT 45.3 ms with 8322 MB,
WINOGRAD 0.26 ms; for 11x11 filters Winograd is "Unsupported".

Here the same model runs on torch tensors on the CPU or the GPU. A tensor's dims are always
logical (N, C, H, W) and (K, C/groups, R, S); its strides say whether it is stored NCHW or
NHWC (``torch.channels_last``), exactly as a cuDNN descriptor does. Outputs come back in the
input's format. Every algorithm computes

    y[n, k, p, q] = sum_{c, r, s} x[n, g*C' + c, p*u - pad_h + r*dil_h, q*v - pad_w + s*dil_w] * w[k, c, r, s]

(cross-correlation; ``g = k // K'`` is k's group, C' = C/groups and K' = K/groups input and
output channels per group, positions outside the input are zero). In CONVOLUTION mode the
filter is flipped first (``w[k, c, R-1-r, S-1-s]``), which is the mathematicians' convolution;
deep-learning frameworks mean CROSS_CORRELATION when they say convolution.

The algorithms, reference first:

``conv_direct``         the definition, one output pixel at a time (the reference; slow)
``conv_im2col``         GEMM: lower the input into a (C*R*S, P*Q) matrix per image in the
                        workspace, then GEMMs (cuDNN's GEMM algorithm)
``conv_implicit_gemm``  the same GEMM without the lowered matrix: one GEMM per filter tap
                        (r, s) on a strided view of the input (IMPLICIT_GEMM, no workspace)
``conv_fft``            pointwise products of spectra (stride 1 only)
``conv_winograd``       Winograd F(2x2, 3x3): 16 multiplies per 2x2 output tile instead of
                        36 (3x3 filters, stride 1, no dilation; anything else NOT_SUPPORTED)


The package, one module per idea, in reading order:

``conv.descriptors``    ``Mode``, ``Algo``, ``Status``, ``MathType``, ``ConvError``,
                        ``NotSupportedError``, ``TensorDescriptor``, ``FilterDescriptor``,
                        ``ConvolutionDescriptor``, ``output_size``, ``output_dims``, ``conv_flops``,
                        ``supported``
``conv.geometry``       the index arithmetic the algorithms share (no public names)
``conv.direct``         ``conv_direct``
``conv.im2col``         ``im2col``, ``col2im``, ``conv_im2col``
``conv.implicit_gemm``  ``conv_implicit_gemm``
``conv.fft``            ``conv_fft``
``conv.winograd``       ``WINOGRAD_BT``, ``WINOGRAD_G``, ``WINOGRAD_AT``, ``winograd_1d``,
                        ``conv_winograd``
``conv.algorithms``     ``ALGORITHMS``, ``workspace_size``, ``conv_forward``
``conv.find``           ``AlgoPerf``, ``DEFAULT_FIND``, ``find_algorithms``, ``LECTURE_GV100_3X3``
``conv.backward``       ``BACKWARD_ALGOS``, ``conv_backward_data``, ``conv_backward_filter``,
                        ``forward``, ``backward``

Every public name is re-exported here: ``from gpudl import conv; conv.conv_forward(...)``.
``gpudl bench conv`` is ``gpudl.benchmarks.conv``.
"""
from __future__ import annotations

from .algorithms import ALGORITHMS, conv_forward, workspace_size
from .backward import BACKWARD_ALGOS, backward, conv_backward_data, conv_backward_filter, forward
from .descriptors import (Algo, ConvError, ConvolutionDescriptor, FilterDescriptor, MathType, Mode, NotSupportedError,
                          Status, TensorDescriptor, conv_flops, output_dims, output_size, supported)
from .direct import conv_direct
from .fft import conv_fft
from .find import DEFAULT_FIND, LECTURE_GV100_3X3, SEED_GV100_3X3, AlgoPerf, find_algorithms
from .im2col import col2im, conv_im2col, im2col
from .implicit_gemm import conv_implicit_gemm
from .winograd import WINOGRAD_AT, WINOGRAD_BT, WINOGRAD_G, conv_winograd, winograd_1d

__all__ = ["Mode", "Algo", "Status", "MathType", "ConvError", "NotSupportedError", "TensorDescriptor",
           "FilterDescriptor", "ConvolutionDescriptor", "output_size", "output_dims", "conv_flops", "supported",
           "conv_direct", "im2col", "col2im", "conv_im2col", "conv_implicit_gemm", "conv_fft", "WINOGRAD_BT",
           "WINOGRAD_G", "WINOGRAD_AT", "winograd_1d", "conv_winograd", "ALGORITHMS", "workspace_size",
           "conv_forward", "AlgoPerf", "DEFAULT_FIND", "find_algorithms", "LECTURE_GV100_3X3", "SEED_GV100_3X3", "BACKWARD_ALGOS",
           "conv_backward_data", "conv_backward_filter", "forward", "backward"]
