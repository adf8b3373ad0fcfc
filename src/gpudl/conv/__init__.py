"""cuDNN-like convolution: the vocabulary of descriptors, algorithms and find.

cuDNN (the lectures' walk-through and example) describes the input and output with
tensor descriptors (dtype, dims, strides), the weights with a filter descriptor (dtype,
format, K, C, R, S) and the operation with a convolution descriptor (pads, strides,
dilations, mode, compute type, groups, math type). It offers several forward algorithms
that compute the same result and trade speed for *workspace*, scratch memory the caller
allocates; ``cudnnFindConvolutionForwardAlgorithm`` runs each and returns them ranked by
time. The lecture's table, 128x128x128x128 FP32 NCHW on a Quadro GV100, 3x3 filters: GEMM
0.76 ms with 72 MB of workspace, IMPLICIT_GEMM 0.62 ms with none, FFT 45.3 ms with 8322 MB,
WINOGRAD 0.26 ms; for 11x11 filters Winograd is "Unsupported".

A tensor's dims are always logical (N, C, H, W) and (K, C/groups, R, S); its strides say whether
it is stored NCHW or NHWC (``torch.channels_last``), exactly as a cuDNN descriptor does. Every
forward algorithm computes

    y[n, k, p, q] = sum_{c, r, s} x[n, g*C' + c, p*u - pad_h + r*dil_h, q*v - pad_w + s*dil_w] * w[k, c, r, s]

(cross-correlation; ``g = k // K'`` is k's group, C' = C/groups and K' = K/groups input and
output channels per group, positions outside the input are zero). In CONVOLUTION mode the
filter is flipped first (``w[k, c, R-1-r, S-1-s]``), which is the mathematicians' convolution;
deep-learning frameworks mean CROSS_CORRELATION when they say convolution. torch's
``torch.nn.functional.conv2d`` computes it (with cuDNN on a GPU); lab 05 builds the algorithms
themselves: output dims, im2col + GEMM, Winograd F(2x2, 3x3), their workspaces, and find.

The package, one module per idea, in reading order:

``conv.descriptors``    ``Mode``, ``Algo``, ``Status``, ``MathType``, ``ConvError``,
                        ``NotSupportedError``, ``TensorDescriptor``, ``FilterDescriptor``,
                        ``ConvolutionDescriptor``
``conv.find``           ``AlgoPerf``, ``DEFAULT_FIND``, ``LECTURE_GV100_3X3``

Every public name is re-exported here: ``from gpudl import conv; conv.ConvolutionDescriptor(pad=1)``.
"""
from __future__ import annotations

from .descriptors import (Algo, ConvError, ConvolutionDescriptor, FilterDescriptor, MathType, Mode, NotSupportedError,
                          Status, TensorDescriptor)
from .find import DEFAULT_FIND, LECTURE_GV100_3X3, SEED_GV100_3X3, AlgoPerf

__all__ = ["Mode", "Algo", "Status", "MathType", "ConvError", "NotSupportedError", "TensorDescriptor",
           "FilterDescriptor", "ConvolutionDescriptor", "AlgoPerf", "DEFAULT_FIND", "LECTURE_GV100_3X3",
           "SEED_GV100_3X3"]
