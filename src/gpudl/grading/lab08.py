"""Checks for lab08_precision_and_sparsity: the visible cases, the examples of the released notebook.

``check.NAME(fn)`` runs them; ``check.NAME(fn, hidden=True)`` runs the instructor's hidden cases
(other formats, random values of every FP32 exponent, exact ties, other shapes, drawn from the
grader's secret) when the notebook is graded. Each check is its cases and a comparison
(``_compare_NAME``) that the hidden cases reuse, so they teach alike. Bit patterns are compared
bit for bit, and a mismatch is explained by what the student's pattern *is*: the truncated
value, the tie rounded away from zero, a flushed subnormal, a value off by a factor of two (the
bias), a saturated overflow.

Where the expected values come from:

- ``decode_bits``: torch's view of the patterns as ``float16``, ``bfloat16`` and ``float8_e5m2``
  (``gpudl.formats.torch_values``);
- ``format_properties``: ``torch.finfo`` (eps, smallest normal, largest), the smallest subnormal
  as ``torch.nextafter(0, 1)`` in the format, the digits ``p log10 2`` with ``p = 1 - log2(eps)``;
- ``round_to_bf16``, ``round_to_fp16``: torch's casts (``gpudl.formats.torch_bits``); the
  truncated and ties-away patterns a hint names: the store of values recorded at release
  (``gpudl.grading.expected``: ``expected("lab08")``). While the student's function runs, any torch
  function that makes a tensor of the format is refused (the guard's ``"torch.bfloat16"``),
  whatever cast it is; NumPy's ``astype("float16")`` is a C method no hook sees, refused only as ``numpy.float16``;
- ``matmul_in_format``: the store (the tensor core's model: no library accumulates in FP16 one
  product at a time);
- ``scaler_step``: ``torch.amp.GradScaler``'s own kernels (``torch._amp_foreach_non_finite_check_and_unscale_``,
  ``torch._amp_update_scale_``);
- ``prune_2_4``, ``sparse_storage``: the store; ``compress_2_4``: invariants (two increasing
  positions in 0..3 per group, and the values at those positions rebuild the matrix);
  ``sparse_matmul``: NumPy's dense product of the pruned matrix;
- the two questions: only whether the answer is well-formed (the verdict is the hidden check's).

The course edition holds none of the code that computes these answers.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from .. import formats
from ..mixed_precision import BACKOFF_FACTOR, GROWTH_FACTOR, GROWTH_INTERVAL, INIT_SCALE, ScalerState
from . import (Case, GradingError, assert_close, call_student, check_cases, choice_letters, exercise, question,
               ratio_hint)
from .expected import expected

LAB = "lab08"

# What the rounding exercises are checked against, so they may not call it.
_CASTS = ["torch.Tensor.to", "torch.Tensor.half", "torch.Tensor.bfloat16", "torch.Tensor.type",
          "numpy.float16", "numpy.half"]
# The course edition's tools that read or round bits through torch, and the figures of a format.
_FORMAT_TOOLS = ["gpudl.formats.torch_values", "gpudl.formats.torch_bits", "gpudl.formats.describe",
                 "gpudl.formats.representable", "gpudl.formats.round_to", "gpudl.formats.round_tf32_torch",
                 "gpudl.formats.spacing", "gpudl.formats.FloatFormat.exact"]


def _hex(v: int, width: int) -> str:
    return f"0x{int(v):0{width}X}"


# --- 1. decoding bit fields --------------------------------------------------------------------

def _compare_decoded(actual: Any, expected: np.ndarray, bits: np.ndarray, e: int, m: int, where: str) -> None:
    __tracebackhide__ = True
    if actual is None:
        raise GradingError(f"{where} returned None: did you forget a `return`?")
    try:
        a = np.asarray(actual, dtype=np.float64)
    except (TypeError, ValueError):
        raise GradingError(f"{where} must return an array of numbers, got {type(actual).__name__}") from None
    if a.shape != expected.shape:
        raise GradingError(f"{where}: your values have shape {a.shape}, expected {expected.shape} (one per pattern)")
    same = (a == expected) | (np.isnan(a) & np.isnan(expected))
    if same.all():
        return
    i = int(np.flatnonzero(~same)[0])
    bias = 2 ** (e - 1) - 1
    b = int(bits[i])
    s, x, mm = b >> (e + m), (b >> m) & (2**e - 1), b & (2**m - 1)
    pattern = f"sign {s}, exponent {x:0{e}b}, mantissa {mm:0{m}b}"
    got, want = float(a[i]), float(expected[i])
    if x == 0:
        hint = (f"an exponent field of 0 is a subnormal (or zero): (-1)^s x 0.M x 2^(1 - bias) = "
                f"(-1)^s x {mm}/2^{m} x 2^{1 - bias}; no implicit 1, and the exponent is 1 - bias, not -bias")
    elif x == 2**e - 1:
        hint = "an all-ones exponent field is special: infinity when the mantissa is 0, NaN otherwise"
    elif want != 0 and got / want in (2.0, 0.5):
        hint = f"off by a factor of {got / want:g}: the bias is 2^(e-1) - 1 = {bias}"
    elif got == -want:
        hint = "the sign is flipped: the sign bit is the top bit, (-1)^s"
    else:
        hint = f"a normal number is (-1)^s x (1 + M / 2^{m}) x 2^(E - {bias})"
    n_bad = int((~same).sum())
    raise GradingError(f"{where}: {n_bad} of {a.size} values differ; pattern {_hex(b, (1 + e + m + 3) // 4)} "
                       f"({pattern}) decodes to {want!r}, yours gave {got!r}: {hint}")


def _compare_decode_bits(fn: Any, cases: Sequence[tuple[np.ndarray, formats.FloatFormat, str]],
                         decode: Callable[[np.ndarray, formats.FloatFormat], np.ndarray]) -> None:
    """``cases``: (patterns, format, label); ``decode(patterns, format)`` gives the expected values."""
    __tracebackhide__ = True
    for bits, fmt, label in cases:
        bits = np.asarray(bits).astype(np.int64)
        e, m = fmt.exponent_bits, fmt.mantissa_bits
        want = np.asarray(decode(bits, fmt), dtype=np.float64)
        where = f"decode_bits on {label}"
        got = call_student(fn, bits.copy(), e, m, forbid=_FORMAT_TOOLS, label="decoding bit fields", what=where)
        _compare_decoded(got, want, bits, e, m, where)


@exercise
def decode_bits(fn: Callable) -> None:
    """``fn(bits, exponent_bits, mantissa_bits)`` -> float64 values of IEEE-style bit patterns."""
    __tracebackhide__ = True
    cases = [(np.array([0x3C00, 0xC000, 0x7BFF, 0x0400, 0x03FF, 0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x3555]),
              formats.FP16, "FP16: 1, -2, 65504, the smallest normal, the largest and smallest subnormal, -0, +-inf, "
                            "NaN, 1/3"),
             (np.array([0x3F80, 0x4049, 0x7F7F, 0x0080, 0x0001, 0x7F80, 0xFFC0]), formats.BF16,
              "BF16: 1, 3.14, the largest, the smallest normal, the smallest subnormal, inf, NaN"),
             (np.arange(256), formats.FP8_E5M2, "every FP8 E5M2 pattern")]
    _compare_decode_bits(fn, cases, formats.torch_values)


# --- 2. format properties from bit counts -----------------------------------------------------------

_PROPERTIES = ("eps", "min_normal", "min_subnormal", "max", "digits")
_PROPERTY_HINTS = {
    "eps": {0.5: "a factor of 1/2: that is the unit roundoff 2^-(m+1); machine epsilon is the gap after 1, 2^-m",
            2.0: "a factor of 2: machine epsilon is 2^-m (m stored mantissa bits)"},
    "min_normal": {2.0: "a factor of 2: the bias is 2^(e-1) - 1, and the smallest normal exponent is 1 - bias",
                   0.5: "a factor of 1/2: the smallest normal is 2^(1 - bias); an exponent field of 0 is not normal"},
    "min_subnormal": {2.0: "a factor of 2: the smallest subnormal is 2^(1 - bias - m)",
                      0.5: "a factor of 1/2: the smallest subnormal is 2^(1 - bias - m), not 2^(-bias - m)"},
    "max": {2.0: "a factor of 2: the all-ones exponent is reserved for inf and NaN",
            0.5: "a factor of 1/2: the largest exponent is (2^e - 2) - bias"},
}


def _finfo_properties(dtype_name: str) -> dict[str, float]:
    """The five figures of one of torch's floating-point dtypes, as torch knows them."""
    import torch

    dtype = getattr(torch, dtype_name)
    info = torch.finfo(dtype)
    zero = torch.zeros((), dtype=dtype)
    return {"eps": float(info.eps), "min_normal": float(info.smallest_normal), "max": float(info.max),
            "min_subnormal": float(torch.nextafter(zero, zero + 1).item()),
            "digits": (1 - math.log2(info.eps)) * math.log10(2)}          # p = m + 1 bits, p log10(2)


def _compare_properties(actual: Any, expected: dict[str, float]) -> None:
    __tracebackhide__ = True
    if not isinstance(actual, dict):
        raise GradingError(f"return a dict with keys {', '.join(_PROPERTIES)}, got {type(actual).__name__}")
    missing = [k for k in _PROPERTIES if k not in actual]
    if missing:
        raise GradingError(f"your dict lacks {', '.join(missing)} (keys: {', '.join(_PROPERTIES)})")
    for key in _PROPERTIES:
        hints = dict(_PROPERTY_HINTS.get(key, {}))
        if key == "max":                       # 2^(emax + 1) / ((2 - 2^-m) 2^emax)
            hints[2.0 / (2.0 - expected["eps"])] = \
                "a factor of 2 / (2 - 2^-m): the largest value is (2 - 2^-m) x 2^emax, every mantissa bit set"
        if key == "digits":
            hints[(expected["digits"] - np.log10(2)) / expected["digits"]] = \
                "a factor of m / (m + 1): digits count all p = m + 1 bits of precision (the implicit 1 too), p log10(2)"
        _close(actual[key], expected[key], key, hints)


def _close(actual: Any, expected: float, name: str, hints: dict[float, str]) -> None:
    """Relative agreement to 1e-9, safe for FP64's largest value (whose square overflows)."""
    __tracebackhide__ = True
    try:
        a = float(actual)
    except (TypeError, ValueError):
        raise GradingError(f"your {name} is {actual!r:.100}, expected a number") from None
    with np.errstate(over="ignore", invalid="ignore"):
        good = math.isfinite(a) and abs(a - expected) <= 1e-9 * abs(expected)
    if not good:
        hint = ratio_hint(a, expected, hints) if math.isfinite(a) else ""
        raise GradingError(f"your {name} is {a:.6g}, expected {expected:.6g}" + (f": off by {hint}" if hint else ""))


def _compare_format_properties(fn: Any, cases: Sequence[tuple[Case, dict[str, float]]]) -> None:
    """``cases``: (the call (exponent_bits, mantissa_bits), the expected figures)."""
    __tracebackhide__ = True
    for case, want in cases:
        check_cases(fn, lambda *_args, _want=want: _want, [case], forbid=_FORMAT_TOOLS + ["torch.finfo"],
                    label="format properties", compare=_compare_properties)


@exercise
def format_properties(fn: Callable) -> None:
    """``fn(exponent_bits, mantissa_bits)`` -> dict of eps, min_normal, min_subnormal, max, digits."""
    __tracebackhide__ = True
    cases = [(Case((5, 10), label="FP16 (5, 10)"), _finfo_properties("float16")),
             (Case((8, 7), label="BF16 (8, 7)"), _finfo_properties("bfloat16")),
             (Case((8, 23), label="FP32 (8, 23)"), _finfo_properties("float32"))]
    _compare_format_properties(fn, cases)


# --- 3, 4. round to nearest even, bit for bit -----------------------------------------------------------

def _rounding_hint(i: int, x: np.ndarray, got: int, want: int, fmt: formats.FloatFormat,
                   truncated: np.ndarray, ties_away: np.ndarray) -> str:
    """Why the student's pattern ``got`` for ``x[i]`` is not ``want``: ``truncated`` and ``ties_away``
    are the patterns of the two common wrong roundings of ``x``."""
    xv = float(x[i])
    width = (fmt.bits + 3) // 4
    want_v = float(formats.torch_values(np.array([want]), fmt)[0])
    got_v = float(formats.torch_values(np.array([got & (2**fmt.bits - 1)]), fmt)[0])
    if np.isinf(want_v) and np.isfinite(got_v) and np.isfinite(xv):
        return (f"past the largest value plus half a step the result is infinity ({_hex(want, width)}), not the "
                "largest number: FP16 and BF16 overflow, they do not saturate")
    if got == int(truncated[i]) and got != want:
        return "that is the truncated value (the low bits dropped): round to the nearest value instead"
    if got == int(ties_away[i]):
        return ("the input lies exactly halfway between two neighbours; a tie goes to the neighbour whose last "
                "mantissa bit is 0 (ties to even), not away from zero")
    if want & ((2**fmt.exponent_bits - 1) << fmt.mantissa_bits) == 0 and want != got and got_v == 0:
        return (f"{xv!r} is below {fmt.name}'s smallest normal ({fmt.min_normal:.3g}) but not below half its smallest "
                f"subnormal ({fmt.min_subnormal:.3g}): it becomes a subnormal (exponent field 0), not zero")
    if np.isnan(xv):
        return "NaN must stay NaN: all-ones exponent, non-zero mantissa (mind a rounding carry into the sign bit)"
    if want_v != 0 and got_v / want_v in (2.0, 0.5, 4.0, 0.25):
        return f"off by a factor of {got_v / want_v:g}: the exponent field is E + bias with {fmt.name}'s bias {fmt.bias}"
    return "round |x| to the grid of its binade (spacing 2^(E - m)), then assemble sign, exponent + bias, mantissa"


def _compare_bits(actual: Any, x: np.ndarray, fmt: formats.FloatFormat, where: str, encode: Callable) -> None:
    """The student's patterns for ``x`` against ``encode(x, fmt, rounding)`` ("rne"; "rtz" and "rna"
    for the hints). NaN inputs need only give a NaN."""
    __tracebackhide__ = True
    want = np.asarray(encode(x, fmt, "rne")).astype(np.int64)
    truncated = np.asarray(encode(x, fmt, "rtz")).astype(np.int64)
    ties_away = np.asarray(encode(x, fmt, "rna")).astype(np.int64)
    if actual is None:
        raise GradingError(f"{where} returned None: did you forget a `return`?")
    a = np.asarray(actual)
    if a.dtype.kind not in "iu":
        raise GradingError(f"{where}: return the bit patterns as unsigned integers (np.uint16), got dtype {a.dtype}")
    if a.shape != x.shape:
        raise GradingError(f"{where}: your result has shape {a.shape}, expected {x.shape}: one pattern per input")
    a = a.astype(np.int64) & (2**fmt.bits - 1)
    nan_in = np.isnan(x)
    nan_out = np.isnan(formats.torch_values(a, fmt))
    bad = np.where(nan_in, ~nan_out, a != want)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    width = (fmt.bits + 3) // 4
    xv = x[i]
    hint = _rounding_hint(i, x, int(a[i]), int(want[i]), fmt, truncated, ties_away)
    raise GradingError(f"{where}: {int(bad.sum())} of {x.size} patterns differ. First: x = {float(xv)!r} "
                       f"(FP32 bits {_hex(np.array([xv], np.float32).view(np.uint32)[0], 8)}) should give "
                       f"{_hex(want[i], width)}, yours is {_hex(a[i], width)}: {hint}")


def _compare_rounding(fn: Any, fmt: formats.FloatFormat, cases: Sequence[tuple[np.ndarray, str]], label: str,
                      encode: Callable) -> None:
    """``cases``: (float32 inputs, label); ``encode(x, fmt, rounding)`` gives the expected patterns."""
    __tracebackhide__ = True
    # torch.<format>: no torch function may make a tensor of the format, whatever cast it is
    forbid = _FORMAT_TOOLS + _CASTS + ([f"torch.{fmt.torch_dtype}"] if fmt.torch_dtype else [])
    for x, what in cases:
        where = f"{fn.__name__} on {what}"
        got = call_student(fn, x.copy(), forbid=forbid, label=label, what=where)
        _compare_bits(got, x, fmt, where, encode)


def _visible_encode(x: np.ndarray, fmt: formats.FloatFormat, rounding: str) -> np.ndarray:
    """Round to nearest even: torch's cast. The wrong roundings a hint names: the store."""
    if rounding == "rne":
        return formats.torch_bits(x, fmt)
    return expected(LAB).encode(x, fmt, rounding)


_NAN_CARRY = np.array([0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00000, 0x7F800001], np.uint32).view(np.float32)


@exercise
def round_to_bf16(fn: Callable) -> None:
    """``fn(x)`` for a float32 array -> uint16 BF16 bit patterns, round to nearest even."""
    __tracebackhide__ = True
    cases = [(np.array([1.0, -2.5, 3.140625, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 0.1, -0.0],
                       np.float32), "1, -2.5, pi, the ties 1 + 2^-8 and 1 + 3 x 2^-8, just past a tie, 0.1, -0"),
             (np.array([3.3895314e38, 3.3961776e38, 3.4028235e38, np.inf, -np.inf, 1e-40, 2.0**-133],
                       np.float32), "the largest BF16, the overflow tie, FP32's largest, +-inf, subnormals"),
             (_NAN_CARRY, "NaNs (0x7FFFFFFF: a rounding carry must not reach the sign bit)")]
    _compare_rounding(fn, formats.BF16, cases, "rounding to BF16", _visible_encode)


@exercise
def round_to_fp16(fn: Callable) -> None:
    """``fn(x)`` for a float32 array -> uint16 FP16 bit patterns, round to nearest even."""
    __tracebackhide__ = True
    cases = [(np.array([1.0, -2.0, 0.1, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-20, 1000.1, -0.0],
                       np.float32), "1, -2, 0.1, the ties 1 + 2^-11 and 1 + 3 x 2^-11, just past a tie, 1000.1, -0"),
             (np.array([65504.0, 65519.99, 65520.0, 1e5, np.inf, -1e9], np.float32),
              "65504, just below and at the overflow tie 65520, 1e5, inf, -1e9"),
             (np.array([6.1035156e-05, 6.0e-05, 1e-5, 2.0**-24, 2.0**-25, 3 * 2.0**-25, 2.0**-26, -1e-6],
                       np.float32), "the smallest normal, subnormals, the ties 2^-25 and 3 x 2^-25, underflow"),
             (_NAN_CARRY, "NaNs")]
    _compare_rounding(fn, formats.FP16, cases, "rounding to FP16", _visible_encode)


# --- 5. a matmul with a chosen input format and accumulator --------------------------------------------------

def _compare_matmul(actual: Any, expected: np.ndarray, accumulate: str, k: int) -> None:
    __tracebackhide__ = True
    if accumulate == "fp16":
        assert_close(actual, expected, dtype="fp16", k=1, name="result (FP16 accumulator)")
    else:
        assert_close(actual, expected, dtype="fp32", k=k, name="result (FP32 accumulator)")


def _compare_matmul_in_format(fn: Any, cases: Sequence[tuple[tuple, str]], ref: Any) -> None:
    """``cases``: ((a, b, inputs, accumulate), label); ``ref.matmul_in_format`` gives the expected
    product (and, for an FP16 accumulator, the FP32 one a hint compares with)."""
    __tracebackhide__ = True
    forbid = ["gpudl.mixed_precision.split_matmul", "gpudl.mixed_precision.split"]
    for args, label in cases:
        a, b, inputs, accumulate = args
        want = np.asarray(ref.matmul_in_format(a, b, inputs, accumulate))
        in32 = np.asarray(ref.matmul_in_format(a, b, inputs, "fp32")) if accumulate == "fp16" else None
        where = f"matmul_in_format on {label}"
        got = call_student(fn, a.copy(), b.copy(), inputs, accumulate, forbid=forbid, label="the tensor-core matmul",
                           what=where)
        try:
            _compare_matmul(got, want, accumulate, a.shape[1])
        except GradingError as exc:
            extra = ""
            if in32 is not None and got is not None:
                try:
                    same32 = np.allclose(np.asarray(got, np.float64), in32, rtol=1e-3)
                except (TypeError, ValueError):
                    same32 = False
                if same32:
                    extra = ("\nyour result is what an FP32 accumulator gives: round the running sum to FP16 after "
                             "every addition (an FP16 accumulator stops growing once its spacing passes the products)")
            raise GradingError(f"{where}:\n{exc}{extra}") from None


@exercise
def matmul_in_format(fn: Callable) -> None:
    """``fn(a, b, inputs, accumulate)`` -> A @ B with inputs rounded to ``inputs`` and a running sum
    rounded to ``accumulate`` after every addition."""
    __tracebackhide__ = True
    g = np.random.default_rng(8)

    def normal(*shape):
        return g.standard_normal(shape).astype(np.float32)

    def positive(*shape):
        return g.random(shape).astype(np.float32)

    cases = [((normal(4, 64), normal(64, 3), "bf16", "fp32"), "BF16 inputs, FP32 accumulator, K = 64"),
             ((normal(4, 64), normal(64, 3), "tf32", "fp32"), "TF32 inputs, FP32 accumulator, K = 64"),
             ((positive(2, 2048), positive(2048, 3), "fp16", "fp16"),
              "FP16 inputs and accumulator, K = 2048 positive products"),
             ((positive(2, 2048), positive(2048, 3), "fp16", "fp32"), "the same with an FP32 accumulator")]
    _compare_matmul_in_format(fn, cases, expected(LAB))


# --- 6. the dynamic loss scaler ---------------------------------------------------------------------------

def _scaler_sequence(g: np.random.Generator, steps: int, overflows: set[int]) -> list[list[np.ndarray]]:
    seq = []
    for t in range(steps):
        grads = [(g.standard_normal(3) * 1e-3).astype(np.float32), (g.standard_normal((2, 2)) * 1e-4).astype(np.float32)]
        if t in overflows:
            grads[t % 2].flat[0] = (np.inf, np.nan, -np.inf)[t % 3]
        seq.append(grads)
    return seq


def _as_state(s: Any, where: str) -> ScalerState:
    __tracebackhide__ = True
    if not isinstance(s, dict) or not {"scale", "growth_tracker"} <= set(s):
        raise GradingError(f"{where}: the new state must be a dict with keys 'scale' and 'growth_tracker', got {s!r}")
    try:
        return ScalerState(float(s["scale"]), int(s["growth_tracker"]))
    except (TypeError, ValueError) as exc:
        raise GradingError(f"{where}: the new state {s!r} is not a positive scale and a count: {exc}") from None


_SCALER_FORBID = ["torch.amp.GradScaler", "torch._amp_update_scale_", "torch._amp_foreach_non_finite_check_and_unscale_",
                  "gpudl.mixed_precision.train_mixed_precision"]


def _run_scaler(fn: Any, seq: list[list[np.ndarray]], label: str, ref: Any, start: int = 0, **kwargs: Any) -> None:
    """The student's steps against ``ref.scaler_step``'s along ``seq``, from the initial scale and
    ``start`` clean steps already counted (1996 reaches torch's growth interval in a few calls)."""
    __tracebackhide__ = True
    state = ScalerState(INIT_SCALE, start)
    for t, true_grads in enumerate(seq):
        scaled = [gr * np.float32(state.scale) for gr in true_grads]
        with np.errstate(invalid="ignore"):
            want_state, want_update = ref.scaler_step(state, scaled, **kwargs)
        where = f"scaler_step at step {t} of {label}"
        result = call_student(fn, {"scale": state.scale, "growth_tracker": state.growth_tracker},
                              [s.copy() for s in scaled], forbid=_SCALER_FORBID, label="the loss scaler", what=where,
                              **kwargs)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise GradingError(f"{where}: return a pair (new_state, update), got {result!r:.200}")
        got_state, got_update = _as_state(result[0], where), result[1]
        overflow = want_update is None
        if overflow and got_update is not None:
            raise GradingError(f"{where}: a gradient is inf or NaN, so this step must be skipped: return None as the "
                               "update (and back off the scale), or the weights become inf/NaN")
        if not overflow and got_update is None:
            raise GradingError(f"{where}: every gradient is finite, yet you skipped the step (update None)")
        before = f"(before: scale {state.scale:g}, {state.growth_tracker} clean steps; inf/NaN now: {overflow})"
        if (got_state.scale, got_state.growth_tracker) != (want_state.scale, want_state.growth_tracker):
            if overflow:
                hint = "on inf/NaN the scale is multiplied by backoff_factor and the count of clean steps restarts at 0"
            elif want_state.scale == state.scale and got_state.scale != state.scale:
                hint = (f"the scale grows only after growth_interval = {kwargs.get('growth_interval', 2000)} clean "
                        "steps in a row, not at every step")
            elif want_state.scale != state.scale:
                hint = ("this is the growth_interval-th clean step in a row: the scale is multiplied by growth_factor "
                        "and the count restarts at 0")
            else:
                hint = "a clean step adds one to growth_tracker"
            raise GradingError(f"{where} {before}: expected scale {want_state.scale:g} with growth_tracker "
                               f"{want_state.growth_tracker}, got {got_state.scale:g} and {got_state.growth_tracker}: {hint}")
        if not overflow:
            if not isinstance(got_update, (list, tuple)) or len(got_update) != len(want_update):
                raise GradingError(f"{where}: the update must be a list of {len(want_update)} arrays, one per gradient")
            for i, (gu, wu) in enumerate(zip(got_update, want_update)):
                assert_close(gu, wu, dtype="fp32", name=f"update[{i}]",
                             hints={state.scale**2: "a factor of scale^2: unscale by dividing by the scale, not multiplying",
                                    state.scale: "a factor of scale: the gradients arrive scaled; divide by the scale"})
        state = want_state


class _GradScaler:
    """``torch.amp.GradScaler``'s step, by its own kernels: the visible cases' oracle."""

    @staticmethod
    def scaler_step(state: ScalerState, grads: Sequence[np.ndarray], **kwargs: Any) -> tuple[ScalerState, Any]:
        import torch

        growth_interval = kwargs.get("growth_interval", GROWTH_INTERVAL)
        growth_factor = kwargs.get("growth_factor", GROWTH_FACTOR)
        backoff_factor = kwargs.get("backoff_factor", BACKOFF_FACTOR)
        scale = torch.full((), state.scale, dtype=torch.float32)
        tracker = torch.full((), state.growth_tracker, dtype=torch.int32)
        found_inf = torch.full((), 0.0, dtype=torch.float32)
        tensors = [torch.from_numpy(np.array(g, dtype=np.float32)) for g in grads]      # copies, unscaled in place
        torch._amp_foreach_non_finite_check_and_unscale_(tensors, found_inf, scale.double().reciprocal().float())
        torch._amp_update_scale_(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval)
        update = None if found_inf.item() else [t.numpy() for t in tensors]
        return ScalerState(float(scale.item()), int(tracker.item())), update


@exercise
def scaler_step(fn: Callable) -> None:
    """``fn(state, grads, growth_interval=2000, growth_factor=2.0, backoff_factor=0.5)`` -> (state, update)."""
    __tracebackhide__ = True
    g = np.random.default_rng(6)
    _run_scaler(fn, _scaler_sequence(g, 14, {2, 3, 9}), "a sequence with growth_interval=3 and inf/NaN at "
                "steps 2, 3 and 9", _GradScaler, growth_interval=3)
    _run_scaler(fn, _scaler_sequence(g, 8, set()), "torch's constants, starting 1996 clean steps in "
                "(the 2000th comes at step 3)", _GradScaler, start=1996)


# --- 7, 8, 9, 10. 2:4 sparsity ---------------------------------------------------------------------------------

def _compare_prune(fn: Any, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True

    def compare(actual, want):
        __tracebackhide__ = True
        assert_close(actual, want, rtol=0.0, atol=0.0, name="pruned matrix")

    try:
        check_cases(fn, ref.prune_2_4, cases, forbid=["gpudl.sparsity.prune_model_2_4", "torch.ao.pruning.WeightNormSparsifier"],
                    label="2:4 pruning", compare=compare)
    except GradingError as exc:
        raise GradingError(f"{exc}\n(groups are 4 consecutive values along the last axis, the reduction dimension K of "
                           "A @ B; keep the 2 of largest |value|, the lower index on a tie)") from None


@exercise
def prune_2_4(fn: Callable) -> None:
    """``fn(w)`` -> ``w`` with the 2 smallest magnitudes of each group of 4 along the last axis set to 0."""
    __tracebackhide__ = True
    g = np.random.default_rng(7)
    cases = [Case((np.array([[0.5, -3.0, 1.0, 2.0, 0.1, 0.2, -0.3, 0.0]]),), label="one row, two groups"),
             Case((np.array([[1.0, -1.0, 1.0, 0.5]]),), label="a tie (keep the lower index)"),
             Case((g.standard_normal((4, 8)),), label="a (4, 8) matrix: groups run along each row (K)")]
    _compare_prune(fn, cases, expected(LAB))


def _rebuild(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The (M, K) matrix that has ``values[i, t]`` at position ``indices[i, t]`` of group ``t // 2``
    of row ``i``, and zeros elsewhere: how the check reads a compressed form back."""
    m, half = values.shape
    dense = np.zeros((m, half // 2, 4), dtype=values.dtype)
    np.put_along_axis(dense, indices.astype(np.int64).reshape(m, half // 2, 2), values.reshape(m, half // 2, 2), axis=-1)
    return dense.reshape(m, 2 * half)


def _check_compressed(result: Any, dense: np.ndarray, where: str) -> None:
    __tracebackhide__ = True
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise GradingError(f"{where}: return a pair (values, indices), got {type(result).__name__}")
    values, indices = (np.asarray(r) for r in result)
    m, k = dense.shape
    for name, arr in (("values", values), ("indices", indices)):
        if arr.shape != (m, k // 2):
            raise GradingError(f"{where}: {name} has shape {arr.shape}, expected {(m, k // 2)}: exactly 2 entries per "
                               "group of 4, even for a group with fewer non-zeros (store zeros)")
    if indices.dtype.kind not in "iu":
        raise GradingError(f"{where}: indices must be integers, got dtype {indices.dtype}")
    if indices.min() < 0 or indices.max() > 3:
        raise GradingError(f"{where}: an index is {int(indices.max() if indices.max() > 3 else indices.min())}; the "
                           "metadata holds 2 bits per value, the position inside its own group of 4 (0..3), not the "
                           "column in the matrix")
    pairs = indices.reshape(m, k // 4, 2)
    if np.any(pairs[..., 0] >= pairs[..., 1]):
        raise GradingError(f"{where}: the two indices of a group must be different and in increasing order "
                           "(the values in the order they sit in the group)")
    rebuilt = _rebuild(values.astype(dense.dtype), indices)
    if not np.array_equal(rebuilt, dense):
        i, j = (int(v) for v in np.argwhere(rebuilt != dense)[0])
        raise GradingError(f"{where}: putting your values back at your indices does not give the matrix: at "
                           f"[{i}, {j}] it has {float(dense[i, j])!r}, yours gives {float(rebuilt[i, j])!r} (index "
                           "t of a row is the position inside group t // 2)")


_COMPRESS_FORBID = ["gpudl.sparsity.compress_cutlass", "gpudl.sparsity.decompress_cutlass",
                    "torch.sparse._semi_structured_conversions.sparse_semi_structured_from_dense_cutlass",
                    "torch.sparse._semi_structured_conversions.sparse_semi_structured_to_dense_cutlass"]


def _compare_compress(fn: Any, cases: Sequence[tuple[np.ndarray, str]]) -> None:
    """``cases``: (a 2:4-sparse matrix, label); judged by the invariants of the compressed form."""
    __tracebackhide__ = True
    for dense, label in cases:
        where = f"compress_2_4 on {label}"
        got = call_student(fn, dense.copy(), forbid=_COMPRESS_FORBID, label="2:4 compression", what=where)
        _check_compressed(got, dense, where)


@exercise
def compress_2_4(fn: Callable) -> None:
    """``fn(w)`` for a 2:4-sparse (M, K) matrix -> (values (M, K/2), indices (M, K/2) in 0..3)."""
    __tracebackhide__ = True
    g = np.random.default_rng(9)
    one = np.zeros((2, 8))
    one[0, 3], one[1, 6] = 5.0, -1.0
    cases = [(expected(LAB).prune_2_4(g.standard_normal((3, 8))), "a pruned (3, 8) matrix"),
             (one, "groups with a single non-zero, and empty groups")]
    _compare_compress(fn, cases)


_STORAGE_HINTS = {
    "value_bits": {2.0: "a factor of 2: only 2 of every 4 values are kept"},
    "metadata_bits": {0.5: "a factor of 1/2: 2 bits for *each kept value* (two per group of 4), not per group",
                      2.0: "a factor of 2: metadata only for the kept values, 2 bits each"},
    "overhead": {0.5: "a factor of 1/2: the overhead is the metadata over the *kept values*, not over the dense matrix",
                 2.0: "a factor of 2: 2 bits of metadata per kept value of `bits` bits"},
    "fraction_of_dense": {},
}
_STORAGE_KEYS = ("value_bits", "metadata_bits", "overhead", "fraction_of_dense")


def _compare_storage(fn: Any, cases: Sequence[tuple[int, int, int]], ref: Any) -> None:
    """``cases``: (m, k, bits); ``ref.sparse_storage(m, k, bits)`` gives the expected dict."""
    __tracebackhide__ = True
    for m, k, bits in cases:
        want = ref.sparse_storage(m, k, bits)
        where = f"sparse_storage({m}, {k}, {bits})"
        got = call_student(fn, m, k, bits, label="2:4 storage", what=where)
        if not isinstance(got, dict) or not set(_STORAGE_KEYS) <= set(got):
            raise GradingError(f"{where}: return a dict with keys {', '.join(_STORAGE_KEYS)}, got {got!r:.200}")
        for key in _STORAGE_KEYS:
            try:
                assert_close(got[key], want[key], rtol=1e-12, atol=0.0, name=key, hints=_STORAGE_HINTS[key])
            except GradingError as exc:
                raise GradingError(f"{where}: {exc}") from None


@exercise
def sparse_storage(fn: Callable) -> None:
    """``fn(m, k, bits)`` -> dict(value_bits, metadata_bits, overhead, fraction_of_dense)."""
    __tracebackhide__ = True
    _compare_storage(fn, [(128, 256, 16), (128, 256, 8)], expected(LAB))


def _compare_sparse_matmul(fn: Any, cases: Sequence[tuple[Case, np.ndarray]]) -> None:
    """``cases``: (the call (values, indices, b), the expected product)."""
    __tracebackhide__ = True
    for case, want in cases:
        check_cases(fn, lambda *_args, _want=want: _want, [case],
                    forbid=_COMPRESS_FORBID + ["gpudl.grading.lab08._rebuild"],
                    label="the compressed sparse matmul", k=16)


@exercise
def sparse_matmul(fn: Callable) -> None:
    """``fn(values, indices, b)`` -> A @ B from A's compressed form."""
    __tracebackhide__ = True
    store = expected(LAB)
    g = np.random.default_rng(10)
    cases = []
    for m, k, n in [(3, 8, 2), (4, 16, 5)]:
        pruned = store.prune_2_4(g.standard_normal((m, k)))
        sp = store.compress_2_4(pruned)
        b = g.standard_normal((k, n))
        cases.append((Case((sp.values, sp.indices.astype(np.int64), b), label=f"A ({m}, {k}) compressed, B ({k}, {n})"),
                      pruned @ b))                                # NumPy's dense product of the pruned matrix
    _compare_sparse_matmul(fn, cases)


# --- 11. questions ----------------------------------------------------------------------------------------
# The visible check says whether the answer is well-formed; which letters are right is the hidden
# check's to say (a verdict here would be one try per letter away from the answer).

@exercise
@question
def tf32_loss_scaling(answer: Any) -> None:
    __tracebackhide__ = True
    letters = choice_letters(answer, "ABCD")
    if len(letters) != 1:
        raise GradingError(f"set TF32_ANSWER to one letter of A, B, C, D, got {answer!r}")


@exercise
@question
def amp_fp32_ops(answer: Any) -> None:
    __tracebackhide__ = True
    choice_letters(answer, "ABCDE")


__all__ = ["decode_bits", "format_properties", "round_to_bf16", "round_to_fp16", "matmul_in_format", "scaler_step",
           "prune_2_4", "compress_2_4", "sparse_storage", "sparse_matmul", "tf32_loss_scaling", "amp_fp32_ops"]
