"""Checks for lab08_precision_and_sparsity.

Every check is an ``@exercise``: it draws its cases (``hidden=True``: from the instructor's
secret seed), computes the answers with the package's references (``gpudl.formats``,
``gpudl.mixed_precision``, ``gpudl.sparsity``), calls the student's function only through
``call_student`` with plain data (NumPy arrays, numbers, strings, lists, dicts) and compares.
Bit patterns are compared bit for bit, and a mismatch is explained by what the student's
pattern *is*: the truncated value, the tie rounded away from zero, a flushed subnormal, a
value off by a factor of two (the bias), a saturated overflow.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import formats, mixed_precision, sparsity
from . import (Case, GradingError, assert_close, call_student, check_cases, check_choice, exercise, ratio_hint, rng)

LAB = "lab08"

# What the rounding exercises are checked against, so they may not call it.
_CASTS = ["torch.Tensor.to", "torch.Tensor.half", "torch.Tensor.bfloat16", "torch.Tensor.type",
          "numpy.float16", "numpy.half"]
_FORMAT_REFS = [formats.decode, formats.encode, formats.round_to, formats.bf16_bits, formats.round_tf32,
                "gpudl.formats.fields", "gpudl.formats.FloatFormat.exact"]


def _hex(v: int, width: int) -> str:
    return f"0x{int(v):0{width}X}"


# --- 1. decoding bit fields --------------------------------------------------------------------

def _pattern_classes(g: np.random.Generator, e: int, m: int, n: int) -> np.ndarray:
    """Bit patterns of every class: zeros, subnormals, normals, the largest, inf, NaN; both signs."""
    top = 2**e - 1
    exps = np.concatenate([np.zeros(n // 4, np.int64), g.integers(1, top, n // 2), np.full(n // 4, top)])
    mants = g.integers(0, 2**m, exps.size)
    mants[: 2] = 0
    signs = g.integers(0, 2, exps.size)
    edge = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2**m - 1], [0, 1, 0], [0, top - 1, 2**m - 1], [0, top, 0],
                     [1, top, 0], [0, top, 1], [1, 0, 0], [1, 1, 2**m - 1]], np.int64)
    s = np.concatenate([signs, edge[:, 0]])
    x = np.concatenate([exps, edge[:, 1]])
    mm = np.concatenate([mants, edge[:, 2]])
    return (s << (e + m)) | (x << m) | mm


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


@exercise
def decode_bits(fn: Callable, hidden: bool = False) -> None:
    """``fn(bits, exponent_bits, mantissa_bits)`` -> float64 values of IEEE-style bit patterns."""
    __tracebackhide__ = True
    if not hidden:
        cases = [(np.array([0x3C00, 0xC000, 0x7BFF, 0x0400, 0x03FF, 0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x3555]),
                  5, 10, "FP16: 1, -2, 65504, the smallest normal, the largest and smallest subnormal, -0, +-inf, "
                         "NaN, 1/3"),
                 (np.array([0x3F80, 0x4049, 0x7F7F, 0x0080, 0x0001, 0x7F80, 0xFFC0]), 8, 7,
                  "BF16: 1, 3.14, the largest, the smallest normal, the smallest subnormal, inf, NaN"),
                 (np.arange(256), 5, 2, "every FP8 E5M2 pattern")]
    else:
        g = rng(f"{LAB}.decode")
        cases = [(np.arange(2**16), 5, 10, "every FP16 pattern")]
        for _ in range(4):
            e, m = int(g.integers(2, 9)), int(g.integers(1, 11))
            cases.append((_pattern_classes(g, e, m, 64), e, m, f"a format with {e} exponent and {m} mantissa bits"))
    for bits, e, m, label in cases:
        bits = bits.astype(np.int64)
        expected = formats.decode(bits.astype(np.uint64), formats.FloatFormat("case", e, m))
        where = f"decode_bits on {label}"
        got = call_student(fn, bits.copy(), e, m, forbid=_FORMAT_REFS, label="decoding bit fields", what=where)
        _compare_decoded(got, expected, bits, e, m, where)


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


def _properties_ref(e: int, m: int) -> dict[str, float]:
    f = formats.FloatFormat("case", e, m)
    return {"eps": f.eps, "min_normal": f.min_normal, "min_subnormal": f.min_subnormal, "max": f.max,
            "digits": f.digits}


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


@exercise
def format_properties(fn: Callable, hidden: bool = False) -> None:
    """``fn(exponent_bits, mantissa_bits)`` -> dict of eps, min_normal, min_subnormal, max, digits."""
    __tracebackhide__ = True
    if not hidden:
        pairs = [(5, 10), (8, 7), (8, 23)]
        labels = ["FP16 (5, 10)", "BF16 (8, 7)", "FP32 (8, 23)"]
    else:
        g = rng(f"{LAB}.properties")
        pairs = [(11, 52), (5, 2)] + [(int(g.integers(3, 12)), int(g.integers(1, 30))) for _ in range(4)]
        labels = [f"{e} exponent and {m} mantissa bits" for e, m in pairs]
    cases = [Case((e, m), label=label) for (e, m), label in zip(pairs, labels)]
    check_cases(fn, _properties_ref, cases, forbid=_FORMAT_REFS, label="format properties",
                compare=_compare_properties)


# --- 3, 4. round to nearest even, bit for bit -----------------------------------------------------------

def _ties(fmt: formats.FloatFormat, g: np.random.Generator, n: int) -> np.ndarray:
    """Exact midpoints between neighbours of ``fmt`` (normal and subnormal), and the overflow tie."""
    v = formats.representable(fmt)
    pick = g.integers(0, v.size - 1, n)
    mids = (v[pick] + v[pick + 1]) / 2
    over = fmt.max + formats.spacing(fmt.max, fmt)[()] / 2
    return np.append(mids, over).astype(np.float32)


def _sweep(g: np.random.Generator, per_exponent: int) -> np.ndarray:
    e = np.repeat(np.arange(256, dtype=np.uint32), per_exponent)
    bits = (g.integers(0, 2, e.size).astype(np.uint32) << 31) | (e << 23) | g.integers(0, 2**23, e.size).astype(np.uint32)
    return bits.view(np.float32)


def _rounding_hint(x: float, got: int, want: int, fmt: formats.FloatFormat) -> str:
    xs = np.array([x], np.float32)
    width = (fmt.bits + 3) // 4
    want_v = float(formats.decode(np.array([want]), fmt)[0])
    got_v = float(formats.decode(np.array([got & (2**fmt.bits - 1)]), fmt)[0])
    if np.isinf(want_v) and np.isfinite(got_v) and np.isfinite(x):
        return (f"past the largest value plus half a step the result is infinity ({_hex(want, width)}), not the "
                "largest number: FP16 and BF16 overflow, they do not saturate")
    if got == int(formats.encode(xs, fmt, "rtz")[0]) and got != want:
        return "that is the truncated value (the low bits dropped): round to the nearest value instead"
    if got == int(formats.encode(xs, fmt, "rna")[0]):
        return ("the input lies exactly halfway between two neighbours; a tie goes to the neighbour whose last "
                "mantissa bit is 0 (ties to even), not away from zero")
    if want & ((2**fmt.exponent_bits - 1) << fmt.mantissa_bits) == 0 and want != got and got_v == 0:
        return (f"{x!r} is below {fmt.name}'s smallest normal ({fmt.min_normal:.3g}) but not below half its smallest "
                f"subnormal ({fmt.min_subnormal:.3g}): it becomes a subnormal (exponent field 0), not zero")
    if np.isnan(x):
        return "NaN must stay NaN: all-ones exponent, non-zero mantissa (mind a rounding carry into the sign bit)"
    if want_v != 0 and got_v / want_v in (2.0, 0.5, 4.0, 0.25):
        return f"off by a factor of {got_v / want_v:g}: the exponent field is E + bias with {fmt.name}'s bias {fmt.bias}"
    return "round |x| to the grid of its binade (spacing 2^(E - m)), then assemble sign, exponent + bias, mantissa"


def _compare_bits(actual: Any, x: np.ndarray, fmt: formats.FloatFormat, where: str) -> None:
    __tracebackhide__ = True
    expected = formats.encode(x, fmt).astype(np.int64)
    if actual is None:
        raise GradingError(f"{where} returned None: did you forget a `return`?")
    a = np.asarray(actual)
    if a.dtype.kind not in "iu":
        raise GradingError(f"{where}: return the bit patterns as unsigned integers (np.uint16), got dtype {a.dtype}")
    if a.shape != x.shape:
        raise GradingError(f"{where}: your result has shape {a.shape}, expected {x.shape}: one pattern per input")
    a = a.astype(np.int64) & (2**fmt.bits - 1)
    nan_in = np.isnan(x)
    nan_out = np.isnan(formats.decode(a.astype(np.uint64), fmt))
    bad = np.where(nan_in, ~nan_out, a != expected)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    width = (fmt.bits + 3) // 4
    xv = x[i]
    hint = _rounding_hint(float(xv), int(a[i]), int(expected[i]), fmt)
    raise GradingError(f"{where}: {int(bad.sum())} of {x.size} patterns differ. First: x = {float(xv)!r} "
                       f"(FP32 bits {_hex(np.array([xv], np.float32).view(np.uint32)[0], 8)}) should give "
                       f"{_hex(expected[i], width)}, yours is {_hex(a[i], width)}: {hint}")


def _rounding_check(fn: Callable, fmt: formats.FloatFormat, cases: list[tuple[np.ndarray, str]], label: str) -> None:
    __tracebackhide__ = True
    for x, what in cases:
        where = f"{fn.__name__} on {what}"
        got = call_student(fn, x.copy(), forbid=_FORMAT_REFS + _CASTS, label=label, what=where)
        _compare_bits(got, x, fmt, where)


_NAN_CARRY = np.array([0x7FFFFFFF, 0xFFFFFFFF, 0x7FC00000, 0x7F800001], np.uint32).view(np.float32)


@exercise
def round_to_bf16(fn: Callable, hidden: bool = False) -> None:
    """``fn(x)`` for a float32 array -> uint16 BF16 bit patterns, round to nearest even."""
    __tracebackhide__ = True
    if not hidden:
        cases = [(np.array([1.0, -2.5, 3.140625, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 0.1, -0.0],
                           np.float32), "1, -2.5, pi, the ties 1 + 2^-8 and 1 + 3 x 2^-8, just past a tie, 0.1, -0"),
                 (np.array([3.3895314e38, 3.3961776e38, 3.4028235e38, np.inf, -np.inf, 1e-40, 2.0**-133],
                           np.float32), "the largest BF16, the overflow tie, FP32's largest, +-inf, subnormals"),
                 (_NAN_CARRY, "NaNs (0x7FFFFFFF: a rounding carry must not reach the sign bit)")]
    else:
        g = rng(f"{LAB}.bf16")
        cases = [(_sweep(g, 16), "random values of every FP32 exponent"),
                 (_ties(formats.BF16, g, 400), "exact ties between BF16 neighbours"),
                 (np.concatenate([_NAN_CARRY, -np.abs(_ties(formats.BF16, g, 50))]), "NaNs and negative ties")]
    _rounding_check(fn, formats.BF16, cases, "rounding to BF16")


@exercise
def round_to_fp16(fn: Callable, hidden: bool = False) -> None:
    """``fn(x)`` for a float32 array -> uint16 FP16 bit patterns, round to nearest even."""
    __tracebackhide__ = True
    if not hidden:
        cases = [(np.array([1.0, -2.0, 0.1, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-20, 1000.1, -0.0],
                           np.float32), "1, -2, 0.1, the ties 1 + 2^-11 and 1 + 3 x 2^-11, just past a tie, 1000.1, -0"),
                 (np.array([65504.0, 65519.99, 65520.0, 1e5, np.inf, -1e9], np.float32),
                  "65504, just below and at the overflow tie 65520, 1e5, inf, -1e9"),
                 (np.array([6.1035156e-05, 6.0e-05, 1e-5, 2.0**-24, 2.0**-25, 3 * 2.0**-25, 2.0**-26, -1e-6],
                           np.float32), "the smallest normal, subnormals, the ties 2^-25 and 3 x 2^-25, underflow"),
                 (_NAN_CARRY, "NaNs")]
    else:
        g = rng(f"{LAB}.fp16")
        sub = (g.random(200) * formats.FP16.min_normal).astype(np.float32)
        cases = [(_sweep(g, 16), "random values of every FP32 exponent"),
                 (_ties(formats.FP16, g, 400), "exact ties between FP16 neighbours, subnormal ones too"),
                 (np.concatenate([sub, -sub, _NAN_CARRY]), "random subnormals, both signs, and NaNs"),
                 ((g.random(200) * 7e4 + 6e4).astype(np.float32), "values around the largest FP16, 65504")]
    _rounding_check(fn, formats.FP16, cases, "rounding to FP16")


# --- 5. a matmul with a chosen input format and accumulator --------------------------------------------------

def _matmul_ref(a, b, inputs, accumulate):
    return mixed_precision.tensor_core_matmul(a, b, inputs=inputs, accumulate=accumulate).astype(np.float32)


def _compare_matmul(actual: Any, expected: np.ndarray, accumulate: str, k: int) -> None:
    __tracebackhide__ = True
    if accumulate == "fp16":
        assert_close(actual, expected, dtype="fp16", k=1, name="result (FP16 accumulator)")
    else:
        assert_close(actual, expected, dtype="fp32", k=k, name="result (FP32 accumulator)")


@exercise
def matmul_in_format(fn: Callable, hidden: bool = False) -> None:
    """``fn(a, b, inputs, accumulate)`` -> A @ B with inputs rounded to ``inputs`` and a running sum
    rounded to ``accumulate`` after every addition."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.matmul") if hidden else np.random.default_rng(8)

    def normal(*shape):
        return g.standard_normal(shape).astype(np.float32)

    def positive(*shape):
        return g.random(shape).astype(np.float32)

    if not hidden:
        cases = [((normal(4, 64), normal(64, 3), "bf16", "fp32"), "BF16 inputs, FP32 accumulator, K = 64"),
                 ((normal(4, 64), normal(64, 3), "tf32", "fp32"), "TF32 inputs, FP32 accumulator, K = 64"),
                 ((positive(2, 2048), positive(2048, 3), "fp16", "fp16"),
                  "FP16 inputs and accumulator, K = 2048 positive products"),
                 ((positive(2, 2048), positive(2048, 3), "fp16", "fp32"), "the same with an FP32 accumulator")]
    else:
        cases = []
        for inputs in ("fp32", "tf32", "fp16", "bf16"):
            k = int(g.integers(16, 200))
            cases.append(((normal(3, k), normal(k, 5), inputs, "fp32"), f"{inputs} inputs, FP32 accumulator, K = {k}"))
        k = int(g.integers(1500, 3000))
        cases.append(((positive(3, k), positive(k, 2), "bf16", "fp16"), f"BF16 inputs, FP16 accumulator, K = {k}"))
        cases.append(((normal(3, 40) * 100, normal(40, 2), "fp16", "fp16"), "FP16 accumulator, large values"))
    forbid = [mixed_precision.tensor_core_matmul, mixed_precision.tf32_matmul, mixed_precision.split_matmul]
    for args, label in cases:
        a, b, inputs, accumulate = args
        expected = _matmul_ref(a, b, inputs, accumulate)
        where = f"matmul_in_format on {label}"
        got = call_student(fn, a.copy(), b.copy(), inputs, accumulate, forbid=forbid, label="the tensor-core matmul",
                           what=where)
        try:
            _compare_matmul(got, expected, accumulate, a.shape[1])
        except GradingError as exc:
            extra = ""
            if accumulate == "fp16" and got is not None:
                in32 = _matmul_ref(a, b, inputs, "fp32")
                if np.allclose(np.asarray(got, np.float64), in32, rtol=1e-3):
                    extra = ("\nyour result is what an FP32 accumulator gives: round the running sum to FP16 after "
                             "every addition (an FP16 accumulator stops growing once its spacing passes the products)")
            raise GradingError(f"{where}:\n{exc}{extra}") from None


# --- 6. the dynamic loss scaler ---------------------------------------------------------------------------

def _scaler_sequence(g: np.random.Generator, steps: int, overflows: set[int]) -> list[list[np.ndarray]]:
    seq = []
    for t in range(steps):
        grads = [(g.standard_normal(3) * 1e-3).astype(np.float32), (g.standard_normal((2, 2)) * 1e-4).astype(np.float32)]
        if t in overflows:
            grads[t % 2].flat[0] = (np.inf, np.nan, -np.inf)[t % 3]
        seq.append(grads)
    return seq


def _as_state(s: Any, where: str) -> mixed_precision.ScalerState:
    __tracebackhide__ = True
    if not isinstance(s, dict) or not {"scale", "growth_tracker"} <= set(s):
        raise GradingError(f"{where}: the new state must be a dict with keys 'scale' and 'growth_tracker', got {s!r}")
    try:
        return mixed_precision.ScalerState(float(s["scale"]), int(s["growth_tracker"]))
    except (TypeError, ValueError) as exc:
        raise GradingError(f"{where}: the new state {s!r} is not a positive scale and a count: {exc}") from None


def _run_scaler(fn: Callable, seq: list[list[np.ndarray]], label: str, start: int = 0, **kwargs: Any) -> None:
    """The student's steps against the reference's along ``seq``, from the initial scale and ``start``
    clean steps already counted (1995 reaches torch's growth interval in a few calls)."""
    __tracebackhide__ = True
    state = mixed_precision.ScalerState(mixed_precision.INIT_SCALE, start)
    for t, true_grads in enumerate(seq):
        scaled = [gr * np.float32(state.scale) for gr in true_grads]
        with np.errstate(invalid="ignore"):
            want_state, want_update = mixed_precision.scaler_step(state, scaled, **kwargs)
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


_SCALER_FORBID = [mixed_precision.scaler_step, mixed_precision.update_scale, mixed_precision.unscale,
                  "torch.amp.GradScaler", "torch._amp_update_scale_", "torch._amp_foreach_non_finite_check_and_unscale_"]


@exercise
def scaler_step(fn: Callable, hidden: bool = False) -> None:
    """``fn(state, grads, growth_interval=2000, growth_factor=2.0, backoff_factor=0.5)`` -> (state, update)."""
    __tracebackhide__ = True
    if not hidden:
        g = np.random.default_rng(6)
        _run_scaler(fn, _scaler_sequence(g, 14, {2, 3, 9}), "a sequence with growth_interval=3 and inf/NaN at "
                    "steps 2, 3 and 9", growth_interval=3)
        _run_scaler(fn, _scaler_sequence(g, 8, set()), "torch's constants, starting 1996 clean steps in "
                    "(the 2000th comes at step 3)", start=1996)
    else:
        g = rng(f"{LAB}.scaler")
        n = int(g.integers(25, 40))
        overflows = {int(v) for v in g.choice(n, 6, replace=False)}
        _run_scaler(fn, _scaler_sequence(g, n, overflows), f"{n} steps, growth_interval=4, growth_factor=4, "
                    "backoff_factor=0.25", growth_interval=4, growth_factor=4.0, backoff_factor=0.25)
        start = int(g.integers(1990, 2000))
        overflow = int(g.integers(2, 8))
        _run_scaler(fn, _scaler_sequence(g, 12, {overflow}), f"torch's constants, starting {start} clean steps in, "
                    f"inf at step {overflow}", start=start)


# --- 7, 8, 9, 10. 2:4 sparsity ---------------------------------------------------------------------------------

@exercise
def prune_2_4(fn: Callable, hidden: bool = False) -> None:
    """``fn(w)`` -> ``w`` with the 2 smallest magnitudes of each group of 4 along the last axis set to 0."""
    __tracebackhide__ = True
    if not hidden:
        g = np.random.default_rng(7)
        cases = [Case((np.array([[0.5, -3.0, 1.0, 2.0, 0.1, 0.2, -0.3, 0.0]]),), label="one row, two groups"),
                 Case((np.array([[1.0, -1.0, 1.0, 0.5]]),), label="a tie (keep the lower index)"),
                 Case((g.standard_normal((4, 8)),), label="a (4, 8) matrix: groups run along each row (K)")]
    else:
        g = rng(f"{LAB}.prune")
        cases = [Case((g.standard_normal((int(g.integers(2, 9)), 4 * int(g.integers(1, 9)))),)) for _ in range(4)]
        cases.append(Case((np.round(g.standard_normal((6, 12))),), label="rounded values: many ties and zeros"))
        cases.append(Case((g.standard_normal((8, 8)) - 3,), label="mostly negative values"))

    def compare(actual, expected):
        __tracebackhide__ = True
        assert_close(actual, expected, rtol=0.0, atol=0.0, name="pruned matrix")

    try:
        check_cases(fn, sparsity.prune_2_4, cases, forbid=[sparsity.prune_2_4, sparsity.mask_2_4],
                    label="2:4 pruning", compare=compare)
    except GradingError as exc:
        raise GradingError(f"{exc}\n(groups are 4 consecutive values along the last axis, the reduction dimension K of "
                           "A @ B; keep the 2 of largest |value|, the lower index on a tie)") from None


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
    rebuilt = sparsity.decompress_2_4(values.astype(dense.dtype), indices)
    if not np.array_equal(rebuilt, dense):
        i, j = (int(v) for v in np.argwhere(rebuilt != dense)[0])
        raise GradingError(f"{where}: putting your values back at your indices does not give the matrix: at "
                           f"[{i}, {j}] it has {float(dense[i, j])!r}, yours gives {float(rebuilt[i, j])!r} (index "
                           "t of a row is the position inside group t // 2)")


@exercise
def compress_2_4(fn: Callable, hidden: bool = False) -> None:
    """``fn(w)`` for a 2:4-sparse (M, K) matrix -> (values (M, K/2), indices (M, K/2) in 0..3)."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.compress") if hidden else np.random.default_rng(9)
    one = np.zeros((2, 8))
    one[0, 3], one[1, 6] = 5.0, -1.0
    if not hidden:
        cases = [(sparsity.prune_2_4(g.standard_normal((3, 8))), "a pruned (3, 8) matrix"),
                 (one, "groups with a single non-zero, and empty groups")]
    else:
        cases = [(sparsity.prune_2_4(g.standard_normal((int(g.integers(2, 7)), 4 * int(g.integers(2, 9))))),
                  "a pruned matrix") for _ in range(3)]
        sparse = sparsity.prune_2_4(g.standard_normal((5, 16))) * (g.random((5, 16)) < 0.5)
        cases += [(sparse, "a pruned matrix with extra zeros"), (np.zeros((1, 4)), "a single empty group")]
    for dense, label in cases:
        where = f"compress_2_4 on {label}"
        got = call_student(fn, dense.copy(), forbid=[sparsity.compress_2_4, sparsity.decompress_2_4],
                           label="2:4 compression", what=where)
        _check_compressed(got, dense, where)


_STORAGE_HINTS = {
    "value_bits": {2.0: "a factor of 2: only 2 of every 4 values are kept"},
    "metadata_bits": {0.5: "a factor of 1/2: 2 bits for *each kept value* (two per group of 4), not per group",
                      2.0: "a factor of 2: metadata only for the kept values, 2 bits each"},
    "overhead": {0.5: "a factor of 1/2: the overhead is the metadata over the *kept values*, not over the dense matrix",
                 2.0: "a factor of 2: 2 bits of metadata per kept value of `bits` bits"},
    "fraction_of_dense": {},
}


@exercise
def sparse_storage(fn: Callable, hidden: bool = False) -> None:
    """``fn(m, k, bits)`` -> dict(value_bits, metadata_bits, overhead, fraction_of_dense)."""
    __tracebackhide__ = True
    if not hidden:
        cases = [(128, 256, 16), (128, 256, 8)]
    else:
        g = rng(f"{LAB}.storage")
        cases = [(int(g.integers(1, 500)), 4 * int(g.integers(1, 300)), int(b)) for b in (4, 16, 32)]
    keys = ("value_bits", "metadata_bits", "overhead", "fraction_of_dense")
    for m, k, bits in cases:
        st = sparsity.storage_2_4(m, k, bits)
        expected = {"value_bits": st.value_bits, "metadata_bits": st.metadata_bits, "overhead": st.overhead,
                    "fraction_of_dense": st.fraction_of_dense}
        where = f"sparse_storage({m}, {k}, {bits})"
        got = call_student(fn, m, k, bits, forbid=[sparsity.storage_2_4], label="2:4 storage", what=where)
        if not isinstance(got, dict) or not set(keys) <= set(got):
            raise GradingError(f"{where}: return a dict with keys {', '.join(keys)}, got {got!r:.200}")
        for key in keys:
            try:
                assert_close(got[key], expected[key], rtol=1e-12, atol=0.0, name=key, hints=_STORAGE_HINTS[key])
            except GradingError as exc:
                raise GradingError(f"{where}: {exc}") from None


@exercise
def sparse_matmul(fn: Callable, hidden: bool = False) -> None:
    """``fn(values, indices, b)`` -> A @ B from A's compressed form."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.spmm") if hidden else np.random.default_rng(10)
    shapes = [(3, 8, 2), (4, 16, 5)] if not hidden else [
        (int(g.integers(1, 9)), 4 * int(g.integers(1, 12)), int(g.integers(1, 9))) for _ in range(4)]
    cases = []
    for m, k, n in shapes:
        sp = sparsity.compress_2_4(sparsity.prune_2_4(g.standard_normal((m, k))))
        cases.append(Case((sp.values, sp.indices.astype(np.int64), g.standard_normal((k, n))),
                          label=f"A ({m}, {k}) compressed, B ({k}, {n})"))
    check_cases(fn, sparsity.sparse_matmul, cases, forbid=[sparsity.sparse_matmul, sparsity.decompress_2_4],
                label="the compressed sparse matmul", k=16)


# --- 11. questions ----------------------------------------------------------------------------------------

_ANSWERS = {"tf32": "ee6874b5c3922b6963686a1e05440287", "amp": "b8d018662dc7cd00bb03141d46f9811c"}


@exercise
def tf32_loss_scaling(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _ANSWERS["tf32"], "what decides whether a small gradient underflows: the "
                 "mantissa or the exponent? Compare TF32's exponent bits with FP16's and FP32's.", question="tf32")


@exercise
def amp_fp32_ops(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCDE", _ANSWERS["amp"], "the lecture sorts operations into those that can use 16 bits "
                 "(matrix products, most pointwise ones), those that need precision (reductions) and those that need "
                 "range (f(x) >> |x|, loss functions): more than one letter.", question="amp")
