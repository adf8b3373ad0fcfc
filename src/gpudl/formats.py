"""Floating-point number formats, bit by bit: what the tensor cores read and write.

A binary floating-point format is three fields, sign ``s``, exponent ``E`` (``e`` bits) and
mantissa ``M`` (``m`` stored bits, after an implicit leading 1), with a bias:

    normal      (-1)^s x 1.M x 2^(E - bias)          for 0 < E < all ones
    subnormal   (-1)^s x 0.M x 2^(1 - bias)          for E = 0 (gradual underflow, zero)
    special     inf (M = 0) and NaN (M != 0)          for E = all ones, in IEEE-style formats

Everything else follows from ``(e, m, bias)``: machine epsilon ``2^-m`` (the gap after 1,
twice the unit roundoff), the smallest normal ``2^(1-bias)``, the smallest subnormal
``2^(1-bias-m)``, the largest value ``(2 - 2^-m) x 2^emax``, and about ``(m+1) log10 2``
decimal digits. FP8 E4M3 (torch's ``float8_e4m3fn``, "fn": finite, NaN-only) breaks the
IEEE rule: it has no infinities, only ``S.1111.111`` is NaN, so its top binade holds
numbers and its largest is 448.

Rounding to a narrower format is round-to-nearest, ties-to-even (RNE): snap to the grid of
the value's binade, whose spacing is ``2^(E - m)``, and on an exact tie pick the neighbour
with an even last bit. What happens past the largest value is a format's overflow rule:
IEEE formats go to infinity; E4M3 either saturates to 448 (torch 2.12 and later, OCP's
saturating mode) or gives NaN (torch up to 2.11, ml_dtypes: OCP's non-saturating mode).
Writing that rounding (and reading bit patterns) is lab 08's work; this module rounds and
reads through torch's own casts and views, the oracle a student's rounding is checked against.

Public names, in reading order:

``FloatFormat``          a format as a frozen value; its derived properties
``FP64``, ``FP32``, ``TF32``, ``FP16``, ``BF16``, ``FP8_E4M3``, ``FP8_E4M3_NONSAT``, ``FP8_E5M2``,
``DOUBLE_DOUBLE``, ``FP128``, ``FORMATS``, ``get_format``
``LectureRow``, ``LECTURE_TABLE``, ``precision_table``, ``compare_with_lecture``, ``LECTURE_SLIPS``
``spacing``, ``ulp_error``   the number line: gaps, errors in ULPs
``torch_bits``, ``torch_values``   torch's cast of float32 values to a format's bits; the values torch reads from bits
``describe``, ``representable``   one pattern spelled out; every value of a (narrow) format, through torch
``round_to``             the values of a format nearest to float32 data, as torch's casts round (RNE)
``round_tf32_torch``     TF32 rounding of a float32 tensor on its own device (torch has no TF32 dtype)
``torch_e4m3_overflow``, ``torch_e4m3_format``   what this torch does to E4M3 past 448
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

_OVERFLOW = ("inf", "nan", "saturate")
_ROUNDING = ("rne", "rna", "rtz")


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: 1 sign bit, ``exponent_bits``, ``mantissa_bits``.

    ``bias`` defaults to ``2^(exponent_bits-1) - 1``. ``infinities=False`` is the FP8 E4M3
    "fn" layout: no infinities, NaN only with every exponent and mantissa bit set.
    ``overflow`` says what a value beyond the largest becomes: "inf" (IEEE), "nan" or
    "saturate" (the largest finite value; infinities saturate too). ``storage`` is how the
    lecture writes the bits when it is not ``1 + e + m`` ("64x2" for double-double);
    ``torch_dtype`` the name of torch's dtype for it ("" when torch has none).
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int | None = None
    infinities: bool = True
    overflow: str = "inf"
    storage: str = ""
    torch_dtype: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.exponent_bits, int) or not 2 <= self.exponent_bits <= 15:
            raise ValueError(f"{self.name}: exponent_bits must be an integer in 2..15, got {self.exponent_bits!r}")
        if not isinstance(self.mantissa_bits, int) or not 1 <= self.mantissa_bits <= 112:
            raise ValueError(f"{self.name}: mantissa_bits must be an integer in 1..112, got {self.mantissa_bits!r}")
        if self.bias is None:
            object.__setattr__(self, "bias", 2 ** (self.exponent_bits - 1) - 1)
        if self.overflow not in _OVERFLOW:
            raise ValueError(f"{self.name}: overflow must be one of {_OVERFLOW}, got {self.overflow!r}")
        if self.infinities and self.overflow == "nan":
            raise ValueError(f"{self.name}: a format with infinities overflows to 'inf' or saturates, not to NaN")
        if not self.infinities and self.overflow == "inf":
            raise ValueError(f"{self.name}: a format without infinities cannot overflow to 'inf'")

    # --- the fields ---------------------------------------------------------------------
    @property
    def bits(self) -> int:
        """Sign + exponent + mantissa bits (16 for FP16, 19 for TF32)."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def precision(self) -> int:
        """Bits of precision p: the stored mantissa bits plus the implicit leading 1."""
        return self.mantissa_bits + 1

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal number, ``1 - bias``."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest binade: all-ones exponent minus one, minus the bias
        (formats without infinities use the all-ones exponent for numbers too)."""
        top = 2 ** self.exponent_bits - 1
        return (top if not self.infinities else top - 1) - self.bias

    # --- derived figures (exact, as Decimal) --------------------------------------------
    def exact(self, quantity: str) -> Decimal:
        """``quantity`` ("eps", "unit_roundoff", "min_normal", "min_subnormal", "max") as an
        exact Decimal, for formats whose range a float64 cannot hold (quad)."""
        with localcontext() as ctx:
            ctx.prec, ctx.Emin, ctx.Emax = 60, -999_999, 999_999
            two = Decimal(2)
            m = self.mantissa_bits
            if quantity == "eps":
                return two ** -m
            if quantity == "unit_roundoff":
                return two ** -(m + 1)
            if quantity == "min_normal":
                return two ** self.emin
            if quantity == "min_subnormal":
                return two ** (self.emin - m)
            if quantity == "max":
                # IEEE: mantissa all ones. Without infinities all ones is NaN: one less.
                top_mantissa = 2 ** m - (1 if self.infinities else 2)
                return (1 + Decimal(top_mantissa) / two ** m) * two ** self.emax
        raise ValueError(f"unknown quantity {quantity!r}: eps, unit_roundoff, min_normal, min_subnormal or max")

    @property
    def eps(self) -> float:
        """Machine epsilon, the gap between 1 and the next number: ``2^-m`` (2 x unit roundoff)."""
        return float(self.exact("eps"))

    @property
    def unit_roundoff(self) -> float:
        """The largest relative error of one RNE rounding: ``2^-(m+1)``."""
        return float(self.exact("unit_roundoff"))

    @property
    def min_normal(self) -> float:
        return float(self.exact("min_normal"))

    @property
    def min_subnormal(self) -> float:
        return float(self.exact("min_subnormal"))

    @property
    def max(self) -> float:
        """The largest finite value (``inf`` as a float for formats wider than float64's range)."""
        return float(self.exact("max"))

    @property
    def digits(self) -> float:
        """Decimal digits of precision, ``p log10 2``."""
        return self.precision * math.log10(2)

    def __str__(self) -> str:
        return f"{self.name} (1 + {self.exponent_bits} + {self.mantissa_bits} bits, bias {self.bias})"


FP64 = FloatFormat("fp64", 11, 52, torch_dtype="float64")
FP32 = FloatFormat("fp32", 8, 23, torch_dtype="float32")
TF32 = FloatFormat("tf32", 8, 10)                      # a tensor-core mode: FP32's range, FP16's mantissa
FP16 = FloatFormat("fp16", 5, 10, torch_dtype="float16")
BF16 = FloatFormat("bf16", 8, 7, torch_dtype="bfloat16")
FP8_E4M3 = FloatFormat("fp8_e4m3", 4, 3, infinities=False, overflow="saturate", torch_dtype="float8_e4m3fn")
FP8_E4M3_NONSAT = FloatFormat("fp8_e4m3_nonsat", 4, 3, infinities=False, overflow="nan",
                              torch_dtype="float8_e4m3fn")
FP8_E5M2 = FloatFormat("fp8_e5m2", 5, 2, torch_dtype="float8_e5m2")
# Double-double is a pair of doubles, not a binary format; as far as the lecture's table goes it
# behaves like one with a 107-bit significand and double's exponent.
DOUBLE_DOUBLE = FloatFormat("double-double", 11, 106, storage="64x2")
FP128 = FloatFormat("quad", 15, 112)

FORMATS: Mapping[str, FloatFormat] = MappingProxyType({f.name: f for f in (
    FP64, FP32, TF32, FP16, BF16, FP8_E4M3, FP8_E4M3_NONSAT, FP8_E5M2, DOUBLE_DOUBLE, FP128)})
_ALIASES = {"float64": "fp64", "double": "fp64", "float32": "fp32", "single": "fp32", "float": "fp32",
            "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8_e4m3",
            "e4m3": "fp8_e4m3", "float8_e5m2": "fp8_e5m2", "e5m2": "fp8_e5m2", "fp8": "fp8_e4m3",
            "tensorfloat32": "tf32", "fp128": "quad", "binary128": "quad"}


def get_format(fmt: FloatFormat | str) -> FloatFormat:
    """A format from itself or its name ("fp16", "half", "bfloat16", "e4m3", "tf32", ...)."""
    if isinstance(fmt, FloatFormat):
        return fmt
    if not isinstance(fmt, str):
        fmt = str(fmt).removeprefix("torch.")          # a torch dtype
    key = fmt.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in FORMATS:
        raise KeyError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    return FORMATS[key]


# =======================================================================================
# The lecture's precision table

@dataclass(frozen=True)
class LectureRow:
    """One row of the lecture's table, as printed."""

    name: str
    bits: str
    precision: int
    digits: int
    eps: str
    min_normal: str
    max: str


LECTURE_TABLE = (
    LectureRow("bfloat16", "16", 8, 2, "7.81e-3", "1.18e-38", "3.40e38"),
    LectureRow("half", "16", 11, 3, "9.77e-4", "6.10e-5", "65504"),
    LectureRow("single (float)", "32", 24, 7, "1.19e-7", "1.18e-38", "3.40e38"),
    LectureRow("double", "64", 53, 16, "2.22e-16", "2.23e-308", "1.79e308"),
    LectureRow("double-double", "64x2", 107, 32, "1.23e-32", "2.23e-308", "1.79e308"),
    LectureRow("quad", "128", 113, 34, "1.93e-34", "3.36e-4932", "1.19e4932"),
)
_TABLE_FORMATS = {"bfloat16": BF16, "half": FP16, "single (float)": FP32, "double": FP64,
                  "double-double": DOUBLE_DOUBLE, "quad": FP128}

# Where the lecture's figures and the formats' bits disagree: (row, column) -> why.
LECTURE_SLIPS = MappingProxyType({
    ("bfloat16", "max"): "bfloat16's largest value is (2 - 2^-7) x 2^127 = 3.39e38; 3.40e38 is single's, whose "
                         "mantissa has 16 more bits to fill the top binade with",
    ("double", "max"): "the largest double is 1.7977e308, 1.80e308 to three figures; the table truncates it to "
                       "1.79e308 (the figure most often quoted), where it rounds everything else (2.2251e-308 -> 2.23e-308)",
    ("double-double", "max"): "the same truncation as double's: 1.7977e308 is 1.80e308 to three figures",
    ("quad", "note"): "the table's footnote says 'quad is double double', yet its own rows tell them apart: "
                      "quad (IEEE binary128) has a 113-bit significand and a 15-bit exponent, double-double is a pair "
                      "of doubles with about 107 bits and double's range",
})


def _sig3(x: Decimal) -> str:
    """``x`` to three significant figures as the lecture prints it: 7.81e-3, 65504, 3.40e38."""
    if x == x.to_integral_value() and x < 10**6:
        return str(int(x))
    with localcontext() as ctx:
        ctx.prec = 3
        mant, exp = f"{+x:e}".split("e")
    return f"{float(mant):.2f}e{int(exp)}"


def precision_table(formats: Mapping[str, FloatFormat] | None = None) -> list[dict[str, Any]]:
    """The lecture's table derived from the bits: for each row bits, precision p, decimal digits
    (rounded), eps, smallest normal and largest value (three significant figures, as printed)."""
    rows = []
    for name, fmt in (formats or _TABLE_FORMATS).items():
        rows.append({"name": name, "bits": fmt.storage or str(fmt.bits), "precision": fmt.precision,
                     "digits": round(fmt.digits), "eps": _sig3(fmt.exact("eps")),
                     "min_normal": _sig3(fmt.exact("min_normal")), "max": _sig3(fmt.exact("max"))})
    return rows


def _same_figure(printed: str, derived: str) -> bool:
    return Decimal(printed) == Decimal(derived)          # "3.40e38" == "3.4e38", never via float (quad)


def compare_with_lecture() -> list[dict[str, Any]]:
    """Every figure of the lecture's table beside the one derived from the bits: one dict per
    (row, column) with ``printed``, ``derived``, ``agrees`` and, where they differ, ``slip``."""
    derived = {r["name"]: r for r in precision_table()}
    out = []
    for row in LECTURE_TABLE:
        d = derived[row.name]
        for col in ("bits", "precision", "digits", "eps", "min_normal", "max"):
            printed, mine = str(getattr(row, col)), str(d[col])
            if col in ("eps", "min_normal", "max"):
                agrees = _same_figure(printed, mine)
            else:
                agrees = printed == mine
            out.append({"row": row.name, "column": col, "printed": printed, "derived": mine, "agrees": agrees,
                        "slip": LECTURE_SLIPS.get((row.name, col), "")})
    return out


# =======================================================================================
# The number line

def _uint(fmt: FloatFormat):
    return np.uint8 if fmt.bits <= 8 else np.uint16 if fmt.bits <= 16 else np.uint32 if fmt.bits <= 32 else np.uint64


def spacing(x: Any, fmt: FloatFormat | str) -> np.ndarray:
    """The gap between ``|x|`` and the next larger value of ``fmt`` (one ULP at ``x``):
    ``2^(E - m)`` in the binade ``[2^E, 2^(E+1))``, ``2^(emin - m)`` among subnormals."""
    fmt = get_format(fmt)
    a = np.abs(np.asarray(x, dtype=np.float64))
    _, e2 = np.frexp(a)
    return np.ldexp(1.0, (np.maximum(e2 - 1, fmt.emin) - fmt.mantissa_bits).astype(np.int32))


def ulp_error(actual: Any, expected: Any, fmt: FloatFormat | str = FP32) -> np.ndarray:
    """|actual - expected| in units of the last place of ``fmt`` at ``expected``."""
    e = np.asarray(expected, dtype=np.float64)
    return np.abs(np.asarray(actual, dtype=np.float64) - e) / spacing(e, fmt)


# =======================================================================================
# torch's casts and views: the bits and values of the formats torch has

_VIEW_BITS = {8: "uint8", 16: "int16", 32: "int32", 64: "int64"}


def _torch_dtype(fmt: FloatFormat):
    import torch

    if not fmt.torch_dtype:
        raise ValueError(f"torch has no dtype for {fmt.name}")
    return getattr(torch, fmt.torch_dtype)


def torch_bits(x: Any, fmt: FloatFormat | str, device: str = "cpu") -> np.ndarray:
    """The bit patterns torch's cast ``tensor.to(dtype)`` writes for float32 values ``x``."""
    import torch

    fmt = get_format(fmt)
    dtype = _torch_dtype(fmt)
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(device).to(dtype)
    return t.view(getattr(torch, _VIEW_BITS[fmt.bits])).cpu().numpy().view(_uint(fmt))


def torch_values(bits: Any, fmt: FloatFormat | str) -> np.ndarray:
    """The values (float64) torch reads from bit patterns of ``fmt``: the patterns viewed as
    torch's dtype of the format, then widened. The counterpart of ``torch_bits``."""
    import torch

    fmt = get_format(fmt)
    dtype = _torch_dtype(fmt)
    b = np.asarray(bits)
    if b.dtype.kind not in "iu":
        raise TypeError(f"bit patterns are integers, got dtype {b.dtype}")
    if b.size and (int(b.min()) < 0 or int(b.max()) >> fmt.bits):
        raise ValueError(f"bit patterns of {fmt.name} have {fmt.bits} bits; got a value outside 0..2^{fmt.bits} - 1")
    raw = np.ascontiguousarray(b.astype(_uint(fmt))).view(_VIEW_BITS[fmt.bits])
    return torch.from_numpy(raw).view(dtype).double().numpy()


def describe(bits: int, fmt: FloatFormat | str) -> str:
    """One bit pattern of a format torch has, spelled out: ``0 01111 0000000000 = +1.0000000000b x 2^0 = 1``
    (the value as torch reads it)."""
    fmt = get_format(fmt)
    pattern = int(bits)
    e, m = fmt.exponent_bits, fmt.mantissa_bits
    value = float(torch_values(np.array([pattern], np.int64), fmt)[0])
    s, biased, frac = pattern >> (e + m), (pattern >> m) % 2**e, pattern % 2**m
    sign = "-" if s else "+"
    if math.isnan(value) or math.isinf(value):
        meaning = "NaN" if math.isnan(value) else f"{sign}inf"
    elif biased == 0:
        meaning = f"{sign}0.{frac:0{m}b}b x 2^{fmt.emin} (subnormal) = {value:.8g}"
    else:
        meaning = f"{sign}1.{frac:0{m}b}b x 2^{biased - fmt.bias} = {value:.8g}"
    return f"{s} {biased:0{e}b} {frac:0{m}b} = {meaning}"


def representable(fmt: FloatFormat | str, positive: bool = True) -> np.ndarray:
    """Every finite value of a format of at most 16 bits that torch has (FP16, BF16, the FP8s),
    sorted, as torch reads all its bit patterns (non-negative ones only by default)."""
    fmt = get_format(fmt)
    if fmt.bits > 16:
        raise ValueError(f"{fmt.name} has {fmt.bits} bits: list at most 16-bit formats")
    values = torch_values(np.arange(2**fmt.bits, dtype=np.int64), fmt)
    values = values[np.isfinite(values)]
    if positive:
        values = values[values >= 0]
    return np.unique(values)


def round_tf32_torch(t: Any, rounding: str = "rne") -> Any:
    """A float32 torch tensor rounded to TF32 on its own device, with integer operations on its
    bits (RNE: add 0xFFF plus the lowest kept bit, clear the 13 low bits; "rna": add 0x1000;
    "rtz": clear), as the GPU's TF32 mode is measured against (``gpudl bench precision``).
    Infinities and NaN pass through."""
    import torch

    if t.dtype != torch.float32:
        raise TypeError(f"round_tf32_torch takes float32 tensors, got {t.dtype}")
    bits = t.contiguous().view(torch.int32)
    if rounding == "rne":
        bits = bits + (0xFFF + ((bits >> 13) & 1))
    elif rounding == "rna":
        bits = bits + 0x1000
    elif rounding != "rtz":
        raise ValueError(f"rounding must be 'rne', 'rna' or 'rtz', got {rounding!r}")
    out = (bits & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(t), out, t)


def round_to(x: Any, fmt: FloatFormat | str) -> np.ndarray:
    """The values of ``fmt`` nearest to ``x``, as float64: torch's cast to the format's dtype and
    back (round to nearest, ties to even; E4M3 past 448 as ``torch_e4m3_overflow`` says), TF32
    through ``round_tf32_torch``, FP32 and FP64 through NumPy's casts.

    ``x`` is read as float32 first (exact for float32 data, the values a GPU reads; float64 data
    with more bits is rounded twice). Formats torch has no dtype for are refused.
    """
    import torch

    fmt = get_format(fmt)
    x = np.asarray(x)
    if x.dtype.kind != "f":
        raise TypeError(f"round_to takes floating-point values, got dtype {x.dtype}")
    if fmt == FP64:
        return x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        x32 = np.ascontiguousarray(x, dtype=np.float32)
    if fmt == FP32:
        return x32.astype(np.float64)
    t = torch.from_numpy(x32)
    if fmt == TF32:
        return round_tf32_torch(t).double().numpy()
    return t.to(_torch_dtype(fmt)).double().numpy()


def torch_e4m3_overflow(device: str = "cpu") -> str:
    """How this torch casts FP32 values past 448 to ``float8_e4m3fn``: "saturate" (to 448;
    torch 2.12 and later) or "nan" (earlier versions)."""
    import torch

    t = torch.tensor([1000.0], device=device).to(torch.float8_e4m3fn).float()
    return "nan" if bool(torch.isnan(t).item()) else "saturate"


def torch_e4m3_format(device: str = "cpu") -> FloatFormat:
    """The E4M3 format with this torch's overflow rule."""
    return FP8_E4M3 if torch_e4m3_overflow(device) == "saturate" else FP8_E4M3_NONSAT
