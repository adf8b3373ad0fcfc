"""The references of lab08_precision_and_sparsity, in the lab's reading order.

1. ``fields``, ``decode``                    bit patterns of any format -> values (``decode_bits``)
2. ``format_properties``                     eps, smallest normal and subnormal, largest, digits from (e, m)
3, 4. ``round_to``, ``encode``, ``bf16_bits``, ``round_tf32``, ``representable``
                                             round to nearest even (or ties away, or truncation), bit for bit
                                             (``round_to_bf16``, ``round_to_fp16``); every value of a format
5. ``tensor_core_matmul``, ``tf32_matmul``, ``matmul_in_format``
                                             D = A B + C with inputs rounded to a format, exact products and an
                                             FP32 or FP16 accumulator rounded after every addition
6. ``update_scale``, ``unscale``, ``scaler_step``   the dynamic loss scaler, as ``torch.amp.GradScaler``
7. ``mask_2_4``, ``prune_2_4``               keep the 2 largest magnitudes of each group of 4 along K
8. ``compress_2_4``, ``decompress_2_4``      values + 2-bit positions, and back
9. ``SparseStorage``, ``storage_2_4``, ``sparse_storage``   the bits of the compressed form
10. ``sparse_matmul``                        A @ B from A's compressed form

These were ``gpudl.formats``, ``gpudl.mixed_precision`` and ``gpudl.sparsity`` before the course
edition lost its answers; what stayed there (the formats as values, the lecture's table, torch's
casts, the MMA arithmetic, ``ScalerState``, ``Sparse24``) is imported from it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from gpudl.formats import FP16, FP32, TF32, FloatFormat, _uint, get_format
from gpudl.mixed_precision import BACKOFF_FACTOR, GROWTH_FACTOR, GROWTH_INTERVAL, ScalerState
from gpudl.references import reference
from gpudl.sparsity import GROUP, INDEX_BITS, KEPT, Sparse24, _groups, is_2_4

_ROUNDING = ("rne", "rna", "rtz")


def _check_numeric(fmt: FloatFormat) -> None:
    if fmt.exponent_bits > 11 or fmt.mantissa_bits > 52:
        raise ValueError(f"{fmt.name} is wider than float64: bit-level work covers formats up to fp64")


# =======================================================================================
# 1. Bit patterns -> values

@reference
def fields(bits: Any, fmt: FloatFormat | str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sign, exponent field, mantissa field) of bit patterns of ``fmt``, as int64 arrays."""
    fmt = get_format(fmt)
    b = np.asarray(bits).astype(np.uint64)
    m, e = fmt.mantissa_bits, fmt.exponent_bits
    if np.any(b >> np.uint64(fmt.bits)):
        raise ValueError(f"bit patterns of {fmt.name} have {fmt.bits} bits; got a value >= 2^{fmt.bits}")
    sign = (b >> np.uint64(e + m)).astype(np.int64)
    exponent = ((b >> np.uint64(m)) & np.uint64(2**e - 1)).astype(np.int64)
    mantissa = (b & np.uint64(2**m - 1)).astype(np.int64)
    return sign, exponent, mantissa


@reference
def decode(bits: Any, fmt: FloatFormat | str) -> np.ndarray:
    """The values (float64) of bit patterns of ``fmt``: normals, subnormals, zeros, inf, NaN."""
    fmt = get_format(fmt)
    _check_numeric(fmt)
    sign, exponent, mantissa = fields(bits, fmt)
    m, top = fmt.mantissa_bits, 2**fmt.exponent_bits - 1
    frac = mantissa.astype(np.float64) / 2.0**m
    normal = np.ldexp(1.0 + frac, (exponent - fmt.bias).astype(np.int32))
    subnormal = np.ldexp(frac, np.int32(fmt.emin))
    value = np.where(exponent == 0, subnormal, normal)
    if fmt.infinities:
        value = np.where(exponent == top, np.where(mantissa == 0, np.inf, np.nan), value)
    else:
        value = np.where((exponent == top) & (mantissa == 2**m - 1), np.nan, value)
    return np.where(sign == 1, -value, value)


# =======================================================================================
# 2. A format's figures

@reference
def format_properties(exponent_bits: int, mantissa_bits: int) -> dict[str, float]:
    """eps, min_normal, min_subnormal, max and digits of the IEEE-style format (e, m)."""
    f = FloatFormat("case", exponent_bits, mantissa_bits)
    return {"eps": f.eps, "min_normal": f.min_normal, "min_subnormal": f.min_subnormal, "max": f.max,
            "digits": f.digits}


# =======================================================================================
# 3, 4. Rounding, bit for bit

@reference
def round_to(x: Any, fmt: FloatFormat | str, rounding: str = "rne") -> np.ndarray:
    """The value of ``fmt`` nearest to each element of ``x`` (float32 or float64), as float64.

    ``rounding``: "rne" (to nearest, ties to even: what casts and tensor cores do), "rna" (to
    nearest, ties away from zero) or "rtz" (toward zero: truncation). The grid of a binade
    ``[2^E, 2^(E+1))`` has spacing ``2^(E-m)``; below the smallest normal the spacing stays
    that of the first binade (subnormals). Past the largest value, ``fmt.overflow`` decides
    (truncation never rounds up, so it saturates). NaN stays NaN; signs (and -0) are kept.
    """
    fmt = get_format(fmt)
    _check_numeric(fmt)
    if rounding not in _ROUNDING:
        raise ValueError(f"rounding must be one of {_ROUNDING}, got {rounding!r}")
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(f"round_to takes floating-point values, got dtype {x.dtype}")
    negative = np.signbit(x)
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(x.astype(np.float64))                  # (a signalling NaN warns when cast)
        _, e2 = np.frexp(a)                               # a = f x 2^e2 with f in [0.5, 1)
        binade = np.maximum(e2 - 1, fmt.emin)             # E with 2^E <= a (clamped: subnormals)
        step = np.ldexp(1.0, (binade - fmt.mantissa_bits).astype(np.int32))
        q = a / step                                      # exact: a power-of-two scaling
        if rounding == "rne":
            n = np.rint(q)                                # numpy's rint rounds half to even
        elif rounding == "rna":
            n = np.floor(q + 0.5)
        else:
            n = np.floor(q)
        r = n * step
        biggest = fmt.max
        too_big = np.isfinite(a) & (r > biggest)
        if rounding == "rtz" or fmt.overflow == "saturate":
            r = np.where(too_big, biggest, r)             # truncation never rounds past the largest value
        else:
            r = np.where(too_big, np.inf if fmt.overflow == "inf" else np.nan, r)
        inf_to = {"inf": np.inf, "nan": np.nan, "saturate": biggest}[fmt.overflow]
        r = np.where(np.isinf(a), inf_to, r)              # E4M3 has no infinity to map inf to
        r = np.where(np.isnan(a), np.nan, r)
    return np.where(negative, -r, r)


@reference
def encode(x: Any, fmt: FloatFormat | str, rounding: str = "rne") -> np.ndarray:
    """Bit patterns of ``fmt`` for the values ``x``: ``round_to`` and then the fields.

    NaN becomes the format's quiet NaN with the sign kept and, for IEEE formats, the top bits
    of an FP32 input's payload (what x86's and torch's FP32 -> FP16 conversion does). NaN bits
    are not part of any standard's contract: torch writes 0xFFFF for every NaN cast to BF16 on
    a CPU, so comparisons of NaN inputs should ask only that the result is a NaN.
    """
    fmt = get_format(fmt)
    x = np.asarray(x)
    r = round_to(x, fmt, rounding)
    m, e = fmt.mantissa_bits, fmt.exponent_bits
    sign = np.signbit(r).astype(np.uint64) | (np.isnan(r) & np.signbit(x)).astype(np.uint64)
    a = np.abs(np.nan_to_num(r, nan=0.0, posinf=0.0, neginf=0.0))
    _, e2 = np.frexp(a)
    is_normal = a >= fmt.min_normal
    exponent = np.where(is_normal, e2 - 1 + fmt.bias, 0).astype(np.int64)
    scale = np.where(is_normal, (e2 - 1 - m).astype(np.int64), fmt.emin - m)
    significand = np.ldexp(a, (-scale).astype(np.int32)).astype(np.uint64)        # exact integer
    mantissa = np.where(is_normal, significand - (np.uint64(1) << np.uint64(m)), significand)
    out = (sign << np.uint64(e + m)) | (exponent.astype(np.uint64) << np.uint64(m)) | mantissa.astype(np.uint64)
    top = np.uint64(2**e - 1)
    if fmt.infinities:
        out = np.where(np.isinf(r), (sign << np.uint64(e + m)) | (top << np.uint64(m)), out)
    if fmt.infinities and fmt.bits > 8:
        quiet = np.uint64(1) << np.uint64(m - 1)
        payload = np.zeros(x.shape, np.uint64)
        if x.dtype == np.float32 and m < 23:
            payload = (x.view(np.uint32).astype(np.uint64) & np.uint64(0x7FFFFF)) >> np.uint64(23 - m)
        nan_bits = (sign << np.uint64(e + m)) | (top << np.uint64(m)) | quiet | payload
    else:                                                 # FP8: every bit set, as torch writes it
        nan_bits = (sign << np.uint64(e + m)) | (top << np.uint64(m)) | np.uint64(2**m - 1)
    out = np.where(np.isnan(r), nan_bits, out)
    return out.astype(_uint(fmt))


@reference
def bf16_bits(x: Any) -> np.ndarray:
    """FP32 -> BF16 bit patterns with integer arithmetic, as torch's C++ does it: add
    ``0x7FFF`` plus the lowest kept bit (so an exact tie rounds to even), keep the top 16
    bits. A carry out of the mantissa moves to the next binade, and past the largest
    value into the infinity pattern, by itself. NaN: a quiet NaN (``0x7FC0``) with its sign."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16))
    nan = (u >> np.uint64(16)) & np.uint64(0x8000) | np.uint64(0x7FC0)
    return np.where(np.isnan(x), nan, rounded).astype(np.uint16)


@reference
def round_tf32(x: Any, rounding: str = "rne") -> np.ndarray:
    """A float32 matrix with every element rounded to TF32 (10 mantissa bits, FP32's exponent):
    the 13 low bits become zero. "rna" and "rtz" give the other rounding a GPU might apply."""
    x = np.asarray(x, dtype=np.float32)
    return round_to(x, TF32, rounding).astype(np.float32)


def representable(fmt: FloatFormat | str, positive: bool = True) -> np.ndarray:
    """Every finite value of a format of at most 16 bits, sorted (non-negative ones only by default)."""
    fmt = get_format(fmt)
    if fmt.bits > 16:
        raise ValueError(f"{fmt.name} has {fmt.bits} bits: list at most 16-bit formats")
    values = decode(np.arange(2**fmt.bits, dtype=np.uint64), fmt)
    values = values[np.isfinite(values)]
    if positive:
        values = values[values >= 0]
    return np.unique(values)


# =======================================================================================
# 5. The tensor core's matrix product

_ACCUMULATORS = ("fp32", "fp16", "exact")


def _round_fast(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """RNE to FP32 or FP16 through NumPy's own (correctly rounded) casts; others via ``round_to``."""
    if fmt is FP32:
        return x.astype(np.float32)
    if fmt is FP16:
        with np.errstate(over="ignore"):
            return x.astype(np.float16)
    return round_to(x, fmt)


@reference
def tensor_core_matmul(a: Any, b: Any, c: Any = None, *, inputs: str | FloatFormat = "fp16",
                       accumulate: str = "fp32", block_k: int = 1, rounding: str = "rne") -> np.ndarray:
    """``D = A B + C`` as a tensor core computes it, on NumPy arrays A (M, K), B (K, N), C (M, N).

    1. A and B are rounded to ``inputs`` ("fp16", "bf16", "tf32", "fp8_e4m3", "fp32", ...) with
       ``rounding`` ("rne"; "rna" or "rtz" to compare);
    2. every product is exact (formed in FP64: at most 2 x 24 significant bits);
    3. the products are added to C in ``block_k`` steps along K: each step adds the exact sum of
       ``block_k`` products to the accumulator and rounds once, to FP32 ("fp32") or to FP16
       ("fp16"). ``accumulate="exact"`` sums everything in FP64 and rounds once to FP32 (the best
       any accumulation order can do).

    Returns the accumulator: float32 (FP32 or exact) or float16 values, shape (M, N).
    """
    if accumulate not in _ACCUMULATORS:
        raise ValueError(f"accumulate must be one of {_ACCUMULATORS}, got {accumulate!r}")
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"need A (M, K) and B (K, N), got {a.shape} and {b.shape}")
    if block_k < 1:
        raise ValueError(f"block_k must be >= 1, got {block_k}")
    fmt = get_format(inputs)
    ar = round_to(a.astype(np.float64, copy=False), fmt, rounding)          # (M, K), exact in FP64
    br = round_to(b.astype(np.float64, copy=False), fmt, rounding)          # (K, N)
    m, n = a.shape[0], b.shape[1]
    c = np.zeros((m, n)) if c is None else np.broadcast_to(np.asarray(c, dtype=np.float64), (m, n))
    if accumulate == "exact":
        with np.errstate(over="ignore"):
            return (c + ar @ br).astype(np.float32)
    acc_fmt = FP32 if accumulate == "fp32" else FP16
    acc = _round_fast(c, acc_fmt)
    for k0 in range(0, a.shape[1], block_k):
        part = ar[:, k0:k0 + block_k] @ br[k0:k0 + block_k, :]              # (M, N), exact for block_k = 1
        with np.errstate(invalid="ignore"):
            acc = _round_fast(acc.astype(np.float64) + part, acc_fmt)
    return acc


@reference
def tf32_matmul(a: Any, b: Any, *, rounding: str = "rne", accumulate: str = "exact") -> np.ndarray:
    """FP32 A @ B in TF32 mode: inputs rounded to TF32, exact products, FP32 result. The GPU's
    accumulation order is its own; "exact" rounds once, "fp32" adds one product at a time."""
    return tensor_core_matmul(np.asarray(a, np.float32), np.asarray(b, np.float32), inputs=TF32,
                              accumulate=accumulate, rounding=rounding)


@reference
def matmul_in_format(a: Any, b: Any, inputs: str, accumulate: str) -> np.ndarray:
    """The exercise's form: ``tensor_core_matmul`` one product at a time, as float32."""
    return tensor_core_matmul(a, b, inputs=inputs, accumulate=accumulate).astype(np.float32)


# =======================================================================================
# 6. The dynamic loss scaler

@reference
def update_scale(state: ScalerState, found_inf: bool, *, growth_factor: float = GROWTH_FACTOR,
                 backoff_factor: float = BACKOFF_FACTOR, growth_interval: int = GROWTH_INTERVAL) -> ScalerState:
    """One update of the scale, as ``torch._amp_update_scale_`` does it: on inf/NaN gradients the
    scale is multiplied by ``backoff_factor`` and the count restarts; otherwise the count grows,
    and at ``growth_interval`` clean steps in a row the scale is multiplied by ``growth_factor``
    (kept only if finite in FP32) and the count restarts. The scale is an FP32 number."""
    if found_inf:
        return ScalerState(float(np.float32(state.scale * backoff_factor)), 0)
    clean = state.growth_tracker + 1
    if clean == growth_interval:
        with np.errstate(over="ignore"):
            grown = np.float32(state.scale) * np.float32(growth_factor)
        return ScalerState(float(grown) if np.isfinite(grown) else state.scale, 0)
    return ScalerState(state.scale, clean)


@reference
def unscale(grads: Sequence[Any], scale: float) -> tuple[list[np.ndarray], bool]:
    """FP32 gradients ``g x (1/scale)`` (GradScaler multiplies by an FP32 reciprocal) and whether
    any is inf or NaN."""
    inv = np.float32(1.0 / np.float64(np.float32(scale)))
    out = [np.asarray(g, dtype=np.float32) * inv for g in grads]
    return out, any(not np.all(np.isfinite(g)) for g in out)


@reference
def scaler_step(state: ScalerState, grads: Sequence[Any], **kwargs: Any) -> tuple[ScalerState, list[np.ndarray] | None]:
    """One step of dynamic loss scaling, given the gradients of the *scaled* loss: unscale them,
    and return the next state with the gradients to apply, or ``None`` when any was inf or NaN
    (the optimizer step is skipped). ``kwargs`` go to ``update_scale``."""
    unscaled, found_inf = unscale(grads, state.scale)
    return update_scale(state, found_inf, **kwargs), (None if found_inf else unscaled)


# =======================================================================================
# 7-10. 2:4 sparsity

@reference
def mask_2_4(a: Any) -> np.ndarray:
    """Boolean mask of the same shape as ``a``: in each group of 4 consecutive values along the
    last axis (the reduction dimension of ``A @ B`` for A (M, K), and of ``x @ W.T`` for a linear
    layer's weight W (out, in)), True at the 2 of largest magnitude; ties go to the lower index."""
    a = np.asarray(a)
    g = _groups(np.abs(a))                                                # (..., K/4, 4)
    order = np.argsort(-g, axis=-1, kind="stable")                        # largest first, stable on ties
    keep = np.zeros(g.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :KEPT], True, axis=-1)
    return keep.reshape(a.shape)


@reference
def prune_2_4(a: Any) -> np.ndarray:
    """``a`` with the 2 smallest magnitudes of every group of 4 along the last axis set to zero."""
    a = np.asarray(a)
    return np.where(mask_2_4(a), a, np.zeros((), a.dtype))


@reference
def compress_2_4(a: Any) -> Sparse24:
    """The kept values of a 2:4-sparse matrix and their positions in their groups.

    Each group stores exactly 2 entries: its non-zeros, filled up with its first zeros when it
    has fewer than 2 (a stored zero changes nothing), in increasing position. A matrix that is
    not 2:4-sparse is refused: prune it first."""
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"compress a matrix (M, K), got shape {a.shape}")
    if not is_2_4(a):
        raise ValueError("the matrix has groups of 4 with more than 2 non-zeros: prune it to 2:4 first")
    g = _groups(a)                                                        # (M, K/4, 4)
    # non-zeros first, then zeros, each by position: the first two are the kept entries
    order = np.argsort(g == 0, axis=-1, kind="stable")[..., :KEPT]
    order = np.sort(order, axis=-1)                                       # (M, K/4, 2)
    values = np.take_along_axis(g, order, axis=-1)
    m = a.shape[0]
    return Sparse24(values.reshape(m, -1), order.reshape(m, -1).astype(np.uint8))


@reference
def decompress_2_4(values: Any, indices: Any) -> np.ndarray:
    """The dense (M, K) matrix back from ``values`` and ``indices`` (M, K/2)."""
    values, indices = np.asarray(values), np.asarray(indices).astype(np.int64)
    sp = Sparse24(values, indices)
    m, k = sp.shape
    dense = np.zeros((m, k // GROUP, GROUP), dtype=values.dtype)
    np.put_along_axis(dense, indices.reshape(m, k // GROUP, KEPT), values.reshape(m, k // GROUP, KEPT), axis=-1)
    return dense.reshape(m, k)


@dataclass(frozen=True)
class SparseStorage:
    """Bits of a compressed 2:4 matrix (values and metadata) next to its dense size."""

    value_bits: int        # bits of all kept values
    metadata_bits: int     # 2 bits per kept value
    dense_bits: int        # bits of the dense matrix

    @property
    def overhead(self) -> float:
        """Metadata as a fraction of the kept values (the lecture's 12.5% for 16-bit data)."""
        return self.metadata_bits / self.value_bits

    @property
    def fraction_of_dense(self) -> float:
        """Values plus metadata as a fraction of the dense matrix (56.25% for 16-bit data)."""
        return (self.value_bits + self.metadata_bits) / self.dense_bits


@reference
def storage_2_4(m: int, k: int, bits: int = 16) -> SparseStorage:
    """Storage of an (M, K) 2:4 matrix of ``bits``-bit values: M*K/2 kept values, 2 bits of
    metadata each, against M*K dense values."""
    if m < 1 or k < 1 or k % GROUP or bits < 1:
        raise ValueError(f"need M >= 1, K a positive multiple of 4 and bits >= 1, got {m}, {k}, {bits}")
    kept = m * k // GROUP * KEPT
    return SparseStorage(kept * bits, kept * INDEX_BITS, m * k * bits)


@reference
def sparse_storage(m: int, k: int, bits: int) -> dict[str, float]:
    """The exercise's form of ``storage_2_4``: a dict of plain numbers (what the store keeps)."""
    st = storage_2_4(m, k, bits)
    return {"value_bits": st.value_bits, "metadata_bits": st.metadata_bits, "overhead": st.overhead,
            "fraction_of_dense": st.fraction_of_dense}


@reference
def sparse_matmul(values: Any, indices: Any, b: Any) -> np.ndarray:
    """``A @ B`` from A's compressed form: kept value ``t`` of row ``i`` multiplies row
    ``4 * (t // 2) + indices[i, t]`` of B. Half the multiplications of the dense product."""
    values, indices, b = np.asarray(values), np.asarray(indices).astype(np.int64), np.asarray(b)
    sp = Sparse24(values, indices)
    m, k = sp.shape
    if b.ndim != 2 or b.shape[0] != k:
        raise ValueError(f"B must be ({k}, N) for A of shape {(m, k)}, got {b.shape}")
    rows = GROUP * (np.arange(values.shape[1]) // KEPT)[None, :] + indices   # (M, K/2): which row of B
    out = np.zeros((m, b.shape[1]), dtype=np.result_type(values, b))
    for t in range(values.shape[1]):
        out += values[:, t, None] * b[rows[:, t], :]                    # (M, N)
    return out
