"""The benchmark's kernels in numba-cuda (``gpudl bench cuda_model``), not the lab's.

They run compiled on a GPU and in numba-cuda's simulator on a CPU (``import gpudl`` first: it
chooses the simulator before numba is imported). The kernels lab 04 asks for (SAXPY, the 2-D
bias, the stencil, the tiled product, the sum) are the students' to write; the lecture shows
them as CUDA C and prose.

``copy_kernel`` / ``strided_copy``      dst[i] = src[i * stride]: coalescing, for the bandwidth sweep
``busy_kernel``                         the same fixed work in every block: the wave staircase
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32


@cuda.jit
def copy_kernel(src, dst, stride):
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[i * stride]


def strided_copy(src: np.ndarray, n: int, stride: int, threads_per_block: int = 256):
    """dst[i] = src[i * stride] for i < n (``src`` holds at least (n - 1) * stride + 1 values)."""
    dst = np.zeros(n, dtype=src.dtype) if isinstance(src, np.ndarray) else cuda.device_array(n, dtype=src.dtype)
    blocks = -(-n // threads_per_block)
    copy_kernel[blocks, threads_per_block](src, dst, stride)
    return dst


@cuda.jit
def busy_kernel(out, iterations):
    i = cuda.grid(1)
    acc = float32(i)
    for _ in range(iterations):
        acc = acc * float32(0.999) + float32(1.0)
    out[i] = acc


__all__ = ["copy_kernel", "strided_copy", "busy_kernel"]
