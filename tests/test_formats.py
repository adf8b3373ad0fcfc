"""gpudl.formats and lab 08's references of it: the formats' figures, bit fields, and rounding bit for bit
against torch's casts (the references, ``gpudl_instructor.references.lab08``), and the course edition's
torch-backed tools (``torch_values``, ``describe``, ``representable``, ``round_to``) against the references."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gpudl import formats as F
from gpudl_instructor.references import lab08 as R

CUDA = torch.cuda.is_available()
NARROW = ["bf16", "fp16", "fp8_e4m3", "fp8_e5m2"]


def _fmt(name: str, device: str = "cpu") -> F.FloatFormat:
    """The format whose overflow rule is this torch's (E4M3 saturates from torch 2.12 on)."""
    return F.torch_e4m3_format(device) if name == "fp8_e4m3" else F.get_format(name)


# --- the inputs: every FP32 exponent, ties, specials ---------------------------------------------

def _exponent_sweep(per_exponent: int = 256, seed: int = 0) -> np.ndarray:
    """Both signs x all 256 FP32 exponents x random mantissas (and the extreme mantissas)."""
    g = np.random.default_rng(seed)
    sign = np.array([0, 1], np.uint32)[:, None, None] << np.uint32(31)
    exponent = np.arange(256, dtype=np.uint32)[None, :, None] << np.uint32(23)
    mantissa = np.concatenate([g.integers(0, 2**23, per_exponent, dtype=np.uint32),
                               np.array([0, 1, 0x400000, 0x7FFFFF], np.uint32)])[None, None, :]
    return (sign | exponent | mantissa).reshape(-1).view(np.float32)


def _ties(fmt: F.FloatFormat) -> np.ndarray:
    """Midpoints between neighbours of ``fmt`` (subnormal, normal, and max + half a step: the
    overflow tie), both signs, and the FP32 numbers just below and above each."""
    v = F.representable(fmt)
    top = v[-1] + F.spacing(v[-1], fmt)[()] if fmt.infinities else v[-1] + (v[-1] - v[-2])
    grid = np.append(v, top)
    mid = ((grid[:-1] + grid[1:]) / 2).astype(np.float32)
    assert np.all(mid.astype(np.float64) == (grid[:-1] + grid[1:]) / 2), "a midpoint is not an FP32 number"
    around = np.concatenate([mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(np.inf))])
    return np.concatenate([around, -around])


SPECIALS = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
                     0xFF800001, 0x7FFFFFFF, 0x7FA00000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80000001,
                     0x007FFFFF, 0x00800000], np.uint32).view(np.float32)
THRESHOLDS = np.array([65504, 65519.99, 65520, 65536, 448, 464, 464.0001, 465, 479.9, 480, 500, 1e6,
                       57344, 61439.996, 61440, 65535, 3.3895314e38, 3.3961776e38, 3.4028235e38,
                       2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0001, 2.0 ** -9, 2.0 ** -10, 2.0 ** -16, 2.0 ** -17,
                       2.0 ** -133, 2.0 ** -134], np.float32)


def _compare(x: np.ndarray, fmt: F.FloatFormat, device: str = "cpu") -> None:
    mine = R.encode(x, fmt)
    theirs = F.torch_bits(x, fmt, device)
    nan_in = np.isnan(x)
    bad = (mine != theirs) & ~nan_in
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        pairs = [(hex(int(b)), float(v), hex(int(m)), hex(int(t)))
                 for b, v, m, t in zip(x[i].view(np.uint32), x[i], mine[i], theirs[i])]
        raise AssertionError(f"{fmt.name}: {int(bad.sum())} of {x.size} differ from torch (fp32 bits, value, ours, "
                             f"torch): {pairs}")
    # NaN bits are no standard's contract (torch writes 0xFFFF for every NaN cast to BF16 on a CPU): NaN in, NaN out
    assert np.all(np.isnan(R.decode(theirs[nan_in], fmt))) and np.all(np.isnan(R.decode(mine[nan_in], fmt)))


@pytest.mark.parametrize("name", NARROW)
def test_rne_matches_torch_on_every_fp32_exponent(name):
    _compare(_exponent_sweep(), _fmt(name))


@pytest.mark.parametrize("name", NARROW)
def test_rne_matches_torch_on_ties_and_their_neighbours(name):
    fmt = _fmt(name)
    _compare(_ties(fmt), fmt)


@pytest.mark.parametrize("name", NARROW)
def test_rne_matches_torch_on_specials_and_thresholds(name):
    fmt = _fmt(name)
    _compare(np.concatenate([SPECIALS, THRESHOLDS, -THRESHOLDS]), fmt)


def test_ties_go_to_even_and_some_inputs_are_ties():
    # 1 + 2^-11 lies halfway between FP16's 1 and 1 + 2^-10: even (1) wins; 1 + 3 x 2^-11 goes up to 1 + 2^-9
    x = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11, 65520.0, 2.0**-25], np.float32)
    assert R.round_to(x, "fp16").tolist() == [1.0, 1 + 2.0**-9, math.inf, 0.0]
    assert R.round_to(x, "fp16", "rna").tolist() == [1 + 2.0**-10, 1 + 2.0**-9, math.inf, 2.0**-24]
    assert R.round_to(x, "fp16", "rtz").tolist() == [1.0, 1 + 2.0**-10, 65504.0, 0.0]
    assert F.round_to(x, "fp16").tolist() == [1.0, 1 + 2.0**-9, math.inf, 0.0]          # torch's cast agrees


def test_e4m3_overflow_rules():
    x = np.array([448, 464, 465, 479, 480, 1e4, np.inf, -np.inf, -465], np.float32)
    sat = R.round_to(x, F.FP8_E4M3)
    assert sat.tolist() == [448, 448, 448, 448, 448, 448, 448, -448, -448]
    nonsat = R.round_to(x, F.FP8_E4M3_NONSAT)
    assert nonsat[:2].tolist() == [448, 448] and np.isnan(nonsat[2:]).all()
    assert F.torch_e4m3_overflow() in ("saturate", "nan")
    # E5M2 is IEEE: the tie above 57344 goes to even, which is infinity
    assert R.round_to(np.array([61439.99, 61440], np.float32), "e5m2").tolist() == [57344, math.inf]


def test_bf16_integer_trick_is_rne():
    x = np.concatenate([_exponent_sweep(64, seed=1), _ties(F.BF16), SPECIALS])
    finite = ~np.isnan(x)
    assert np.array_equal(R.bf16_bits(x)[finite], R.encode(x, "bf16")[finite])
    assert np.isnan(R.decode(R.bf16_bits(x)[~finite], "bf16")).all()


@pytest.mark.parametrize("name", ["fp64", "fp32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2"])
def test_derived_figures_match_torch_finfo(name):
    fmt = F.get_format(name)
    info = torch.finfo(getattr(torch, fmt.torch_dtype))
    assert fmt.eps == info.eps and fmt.max == info.max and fmt.min_normal == info.smallest_normal
    assert fmt.bits == info.bits
    if name in ("fp32", "fp16", "bf16", "fp64"):
        one = torch.tensor(0.0, dtype=getattr(torch, fmt.torch_dtype))
        assert fmt.min_subnormal == torch.nextafter(one, one + 1).item()


def test_the_lecture_table_is_reproduced_except_its_named_slips():
    rows = F.compare_with_lecture()
    assert len(rows) == 6 * 6
    wrong = [(r["row"], r["column"]) for r in rows if not r["agrees"]]
    assert wrong == [("bfloat16", "max"), ("double", "max"), ("double-double", "max")]
    for r in rows:
        assert bool(r["slip"]) == (not r["agrees"]), r
    derived = {r["name"]: r for r in F.precision_table()}
    assert derived["bfloat16"]["max"] == "3.39e38" and derived["double"]["max"] == "1.80e308"
    assert derived["half"] == {"name": "half", "bits": "16", "precision": 11, "digits": 3, "eps": "9.77e-4",
                               "min_normal": "6.10e-5", "max": "65504"}
    assert derived["quad"]["min_normal"] == "3.36e-4932" and derived["quad"]["max"] == "1.19e4932"
    assert derived["double-double"]["bits"] == "64x2"


def test_decode_every_fp16_pattern_matches_numpy():
    bits = np.arange(2**16, dtype=np.uint16)
    mine = R.decode(bits, "fp16")
    theirs = bits.view(np.float16).astype(np.float64)
    same = (mine == theirs) | (np.isnan(mine) & np.isnan(theirs))
    assert same.all()
    assert np.array_equal(np.signbit(mine[~np.isnan(mine)]), np.signbit(theirs[~np.isnan(theirs)]))


@pytest.mark.parametrize("name", ["bf16", "fp8_e4m3", "fp8_e5m2"])
def test_decode_every_pattern_matches_torch(name):
    fmt = F.get_format(name)
    n = 2**fmt.bits
    bits = np.arange(n, dtype=np.uint16 if n > 256 else np.uint8)
    view = torch.int16 if n > 256 else torch.uint8
    theirs = torch.from_numpy(bits.view(np.int16) if n > 256 else bits).view(view).view(
        getattr(torch, fmt.torch_dtype)).double().numpy()
    mine = R.decode(bits, fmt)
    assert np.array_equal(mine, theirs, equal_nan=True)
    assert np.array_equal(F.torch_values(bits, fmt), theirs, equal_nan=True)       # the course edition's view


def test_fields_and_describe():
    assert [int(v[0]) for v in R.fields(np.array([0xC000]), "fp16")] == [1, 16, 0]          # -2.0
    assert F.describe(0x3C00, "fp16").startswith("0 01111 0000000000 = +1.0000000000b x 2^0")
    assert F.describe(0x3C00, "fp16").endswith("= 1")
    assert "subnormal" in F.describe(0x0001, "fp16")
    assert F.describe(0x7F, "fp8_e4m3").endswith("NaN") and F.describe(0x7C00, "fp16").endswith("+inf")
    assert F.describe(0xC000, "bf16").startswith("1 10000000 0000000 = -1.0000000b x 2^1")
    with pytest.raises(ValueError, match="16 bits"):
        R.fields(np.array([2**16]), "fp16")
    with pytest.raises(ValueError, match="16 bits"):
        F.torch_values(np.array([2**16]), "fp16")
    with pytest.raises(ValueError, match="torch has no dtype"):
        F.describe(0, "tf32")


def test_encode_decode_roundtrip_and_fp32_is_numpy():
    with np.errstate(invalid="ignore"):                       # signalling NaNs warn when cast
        x = _exponent_sweep(32, seed=3).astype(np.float64) * 1.000000001
    assert np.array_equal(R.round_to(x, "fp32"), x.astype(np.float32).astype(np.float64), equal_nan=True)
    assert np.array_equal(F.round_to(x, "fp32"), x.astype(np.float32).astype(np.float64), equal_nan=True)
    for name in ("fp16", "bf16", "tf32"):
        v = R.round_to(x.astype(np.float32), name)
        assert np.array_equal(R.decode(R.encode(v.astype(np.float32), name), name), v, equal_nan=True)


def test_round_tf32_clears_13_bits_and_matches_integer_rounding():
    from gpudl.mixed_precision import round_tf32_torch

    x = np.concatenate([_exponent_sweep(64, seed=2), _ties(F.BF16).astype(np.float32)])
    x = x[np.isfinite(x)]
    for rounding in ("rne", "rna", "rtz"):
        mine = R.round_tf32(x, rounding)
        assert not np.any(mine.view(np.uint32) & 0x1FFF)
        theirs = round_tf32_torch(torch.from_numpy(x), rounding).numpy()
        assert np.array_equal(mine, theirs), rounding


def test_spacing_matches_numpy_and_ulp_error():
    x = np.float16([1.0, 1000.0, 6.1e-5, 1e-7, 60000.0])
    assert np.array_equal(F.spacing(x, "fp16"), np.spacing(x).astype(np.float64))
    assert F.ulp_error(np.float32(1 + 2**-22), 1.0).item() == 2.0
    assert len(F.representable("fp8_e4m3")) == 127 and F.representable("fp8_e4m3")[-1] == 448


def test_bad_formats_and_inputs_are_refused():
    with pytest.raises(ValueError, match="overflow"):
        F.FloatFormat("x", 4, 3, infinities=False, overflow="inf")
    with pytest.raises(ValueError, match="exponent_bits"):
        F.FloatFormat("x", 1, 3)
    with pytest.raises(TypeError, match="floating-point"):
        F.round_to(np.array([1, 2]), "fp16")
    with pytest.raises(TypeError, match="floating-point"):
        R.round_to(np.array([1, 2]), "fp16")
    with pytest.raises(ValueError, match="rounding"):
        R.round_to(np.array([1.0]), "fp16", "up")
    with pytest.raises(ValueError, match="torch has no dtype"):
        F.round_to(np.array([1.0]), F.FloatFormat("bf16 + 1 bit", 8, 8))
    with pytest.raises(KeyError, match="unknown format"):
        F.get_format("fp12")


# --- the course edition's tools, through torch, against the references ------------------------------

@pytest.mark.parametrize("name", NARROW + ["tf32", "fp32"])
def test_the_course_round_to_is_rne_as_the_reference_computes_it(name):
    fmt = _fmt(name)
    x = np.concatenate([_exponent_sweep(64, seed=4), SPECIALS, THRESHOLDS, -THRESHOLDS,
                        _ties(fmt if name not in ("tf32", "fp32") else F.BF16)])
    with np.errstate(invalid="ignore"):
        assert np.array_equal(F.round_to(x, fmt), R.round_to(x, fmt), equal_nan=True)


@pytest.mark.parametrize("name", NARROW)
def test_torch_values_and_representable_are_the_references(name):
    fmt = _fmt(name)
    bits = np.arange(2**fmt.bits)
    assert np.array_equal(F.torch_values(bits, fmt), R.decode(bits, fmt), equal_nan=True)
    assert np.array_equal(F.representable(fmt), R.representable(fmt))
    assert np.array_equal(F.representable(fmt, positive=False), R.representable(fmt, positive=False))
    for pattern in (0, 1, 2**fmt.mantissa_bits, 2**(fmt.bits - 1) + 3):
        value = float(R.decode(np.array([pattern]), fmt)[0])
        assert F.describe(pattern, fmt).endswith(f"= {value:.8g}"), (pattern, F.describe(pattern, fmt))


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (torch's GPU casts)")
@pytest.mark.parametrize("name", NARROW)
def test_rne_matches_torch_cuda_casts(name):
    fmt = _fmt(name, "cuda")
    _compare(np.concatenate([_exponent_sweep(), _ties(fmt), SPECIALS, THRESHOLDS, -THRESHOLDS]), fmt, "cuda")
