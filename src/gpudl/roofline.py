"""Bytes and FLOPs of layers, and the roofline of a GPU.

A kernel that does ``F`` floating-point operations and moves ``B`` bytes to and from DRAM
has arithmetic intensity ``I = F / B`` (FLOP/byte). On a device with peak compute ``P``
(FLOP/s) and memory bandwidth ``W`` (bytes/s) it cannot run faster than
``min(P, I x W)``: below the ridge point ``I* = P / W`` it is memory-bound, above it
compute-bound. Counting conventions follow the lectures:

- a multiply-add is 2 FLOPs;
- a layer reads its inputs (and weights) once and writes its outputs once.

The roofline model itself (a layer's FLOPs and intensity, the roof, memory- or compute-bound,
utilization) is what lab01 asks students to write: those answers live with the instructor. This
module keeps the byte counts the course's other units use, ``Op`` (an operation with its FLOPs
and bytes) and the chart of a real GPU's roofline.

Public names: ``tensor_bytes``, ``conv2d_bytes``, ``pool2d_flops``, ``pool2d_bytes``,
``elementwise_flops``, ``elementwise_bytes``, ``layer_norm_flops``, ``layer_norm_bytes``, ``Op``,
``roofline_plot``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .references import reference
from .hardware import GPUSpec, bytes_per_element, normalize_dtype, peak_bandwidth, peak_flops


def _positive_ints(name: str, values: Sequence[int], length: int | None = None) -> tuple[int, ...]:
    values = tuple(int(v) for v in values)
    if length is not None and len(values) != length:
        raise ValueError(f"{name} must have {length} entries, got {len(values)}: {values}")
    if any(v <= 0 for v in values):
        raise ValueError(f"{name} must be positive, got {values}")
    return values


@reference
def tensor_bytes(shape: Sequence[int], dtype: Any = "fp32") -> int:
    """Bytes of a dense tensor: ``tensor_bytes((1, 3, 416, 480), "fp32") == 2_396_160``."""
    return int(math.prod(_positive_ints("shape", shape)) * bytes_per_element(dtype))


# --- convolution ---------------------------------------------------------------------------

def _conv_shapes(in_shape, out_shape, kernel_size, groups):
    n, c, _, _ = _positive_ints("in_shape (N, C, H, W)", in_shape, 4)
    n2, k, p, q = _positive_ints("out_shape (N, K, P, Q)", out_shape, 4)
    r, s = _positive_ints("kernel_size (R, S)", kernel_size if not isinstance(kernel_size, int)
                          else (kernel_size, kernel_size), 2)
    if n != n2:
        raise ValueError(f"batch sizes differ: input N={n}, output N={n2}")
    if groups <= 0 or c % groups or k % groups:
        raise ValueError(f"groups={groups} must divide both input channels C={c} and output channels K={k}")
    return n, c, k, p, q, r, s


@reference
def conv2d_bytes(in_shape: Sequence[int], out_shape: Sequence[int], kernel_size: int | Sequence[int],
                 dtype: Any = "fp32", *, bias: bool = False, groups: int = 1,
                 include_weights: bool = True) -> int:
    """Bytes moved by a convolution: input + output (+ filter and bias when ``include_weights``).

    The lecture counts input and output only: 2,396,160 + 3,194,880 bytes in FP32 for its example.
    """
    n, c, k, p, q, r, s = _conv_shapes(in_shape, out_shape, kernel_size, groups)
    elements = math.prod(in_shape) + math.prod(out_shape)
    if include_weights:
        elements += k * (c // groups) * r * s + (k if bias else 0)
    return int(elements * bytes_per_element(dtype))


# --- pooling, elementwise, normalisation --------------------------------------------------

@reference
def pool2d_flops(out_elements: int, window: int | Sequence[int]) -> int:
    """One operation (compare or add) per window element per output."""
    r, s = (window, window) if isinstance(window, int) else tuple(window)
    _positive_ints("(out_elements, R, S)", (out_elements, r, s))
    return out_elements * r * s


@reference
def pool2d_bytes(in_elements: int, out_elements: int, dtype: Any = "fp16") -> int:
    """Each input read once, each output written once."""
    _positive_ints("(in_elements, out_elements)", (in_elements, out_elements))
    return int((in_elements + out_elements) * bytes_per_element(dtype))


@reference
def elementwise_flops(elements: int, ops_per_element: int = 1) -> int:
    """E.g. ReLU: one operation per element."""
    _positive_ints("(elements, ops_per_element)", (elements, ops_per_element))
    return elements * ops_per_element


@reference
def elementwise_bytes(elements: int, dtype: Any = "fp16", *, inputs: int = 1, outputs: int = 1) -> int:
    """Each of ``inputs`` tensors read once and each of ``outputs`` written once."""
    _positive_ints("(elements, inputs, outputs)", (elements, inputs, outputs))
    return int(elements * (inputs + outputs) * bytes_per_element(dtype))


# Per element: mean (add), centre (sub), variance (mul, add), normalise (mul), affine (mul, add).
LAYER_NORM_FLOPS_PER_ELEMENT = 7


@reference
def layer_norm_flops(rows: int, cols: int) -> int:
    """Layer norm over the last dimension of a (rows, cols) tensor, with a learned scale and shift."""
    _positive_ints("(rows, cols)", (rows, cols))
    return LAYER_NORM_FLOPS_PER_ELEMENT * rows * cols + 3 * rows   # + mean, variance, rsqrt per row


@reference
def layer_norm_bytes(rows: int, cols: int, dtype: Any = "fp16") -> int:
    """Read x, write y, read the scale and shift (cols each)."""
    _positive_ints("(rows, cols)", (rows, cols))
    return int((2 * rows * cols + 2 * cols) * bytes_per_element(dtype))


# --- the model -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Op:
    """A named operation placed on a roofline."""

    name: str
    flops: float
    bytes: float

    def __post_init__(self) -> None:
        if self.flops < 0 or self.bytes <= 0:
            raise ValueError(f"{self.name}: need flops >= 0 and bytes > 0, got {self.flops}, {self.bytes}")

    @property
    def intensity(self) -> float:
        """FLOPs per byte moved."""
        return self.flops / self.bytes


@reference
def roofline_plot(spec: GPUSpec | str, dtype: Any = "fp16", ops: Iterable[Op] = (), *,
                  tensor_cores: bool = True, ax: Any = None, intensity_range: tuple[float, float] = (0.05, 2000.0),
                  color: str = "black"):
    """Draw the roofline of a GPU of ``hardware.SPECS`` (or the one ``hardware.detect`` returns) for
    ``dtype`` on log-log axes, from its datasheet peaks, with its ridge point and ``ops``.

    Returns the matplotlib Axes. The roof is ``ax.lines[0]``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    from .hardware import get_spec

    spec = get_spec(spec)
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    peak = peak_flops(spec, dtype, tensor_cores=tensor_cores)
    bw = peak_bandwidth(spec)
    ridge = peak / bw
    ops = sorted(ops, key=lambda op: op.intensity)
    # The roof spans the ridge and every op, with room on both sides.
    lo = min([intensity_range[0], ridge / 10, *(op.intensity / 2 for op in ops)])
    hi = max([intensity_range[1], ridge * 10, *(op.intensity * 2 for op in ops)])
    x = np.geomspace(lo, hi, 256)
    ax.loglog(x, np.where(x < ridge, x * bw, peak), color=color, lw=2,
              label=f"{spec.name} {normalize_dtype(dtype)}: {peak / 1e12:.0f} TFLOP/s, {bw / 1e9:.0f} GB/s")
    ax.axvline(ridge, color="gray", ls=":", lw=1)
    ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, peak), textcoords="offset points", xytext=(5, -15),
                fontsize=8, color="gray")
    for i, op in enumerate(ops):
        y = op.intensity * bw if op.intensity < ridge else peak
        ax.plot([op.intensity], [y], "o")
        # Labels alternate above-left and below-right of the roof, so that neighbours do not collide.
        above = i % 2 == 0
        ax.annotate(op.name, (op.intensity, y), textcoords="offset points", xytext=(-6, 4) if above else (6, -10),
                    ha="right" if above else "left", fontsize=8)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable FLOP/s")
    ax.set_title("Roofline")
    ax.legend(loc="lower right", fontsize=8)
    return ax
