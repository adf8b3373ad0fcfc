"""The figures course/08_precision_and_sparsity.ipynb quotes, and how each is computed."""
from __future__ import annotations

from decimal import Decimal

from figures import Figure, recorded, rung as _rung
from gpudl import formats as F
from gpudl import hardware, mixed_precision as mp, sparsity
from gpudl.formats import BF16, FP8_E4M3, FP8_E5M2, FP16, FP32, FP64, FP128, TF32

_LECTURE = {row.name: row for row in F.LECTURE_TABLE}
_DERIVED = {row["name"]: row for row in F.precision_table()}
_NOT_FLOAT = "beyond float64's range: formats.precision_table() derives it as a string, tests/test_formats.py checks it"


def _sparse(n: int, key: str, gpu: str = "H100-SXM") -> float:
    return next(r[key] for r in recorded("precision", "2:4 vs dense", gpu) if r["n"] == n)


def _tf32_ulp(rounding: str, gpu: str = "H100-SXM") -> float:
    return next(r["median_ulp"] for r in recorded("precision", "TF32 in ULPs", gpu)
                if r["n"] == 1024 and r["case"] == f"uniform: cuBLAS TF32 vs emulation ({rounding})")


def _crossover(gpu: str) -> tuple[int, int]:
    """The largest size at which 2:4 lost to dense on ``gpu`` and the smallest at which it won."""
    rows = recorded("precision", "2:4 vs dense", gpu)
    return max(r["n"] for r in rows if r["speedup"] < 1), min(r["n"] for r in rows if r["speedup"] > 1)


def _same_tf32_rows(gpu: str, other: str = "H100-SXM") -> float:
    """1 when every TF32-in-ULPs row of ``gpu`` equals ``other``'s, else NaN (the figure then fails)."""
    same = recorded("precision", "TF32 in ULPs", gpu) == recorded("precision", "TF32 in ULPs", other)
    return 1 if same else float("nan")


def _derived(name: str, column: str) -> float:
    return float(Decimal(_DERIVED[name][column]))


def _printed(name: str, column: str) -> float:
    return float(Decimal(getattr(_LECTURE[name], column)))


def _bench_size() -> float:
    from gpudl import benchmarks

    return benchmarks.parser("precision").parse_args([]).size


FIGURES = [
    # the introduction
    Figure("behind 125 and", 125, lambda ns: ns["v100_peak"], rtol=0.01),
    Figure("312 TFLOP/s, why", 312, lambda ns: ns["a100_peak"], rtol=0.01),
    # 1. the lecture's table, derived from the bits
    Figure("bfloat16's epsilon 7.81e-3", 7.81e-3, lambda ns: float(Decimal(ns["derived"]["bfloat16"]["eps"]))),
    Figure("half's 9.77e-4", 9.77e-4, lambda ns: float(Decimal(ns["derived"]["half"]["eps"]))),
    Figure("6.10e-5", 6.10e-5, lambda ns: float(Decimal(ns["derived"]["half"]["min_normal"]))),
    Figure("largest 65504", 65504, lambda ns: float(Decimal(ns["derived"]["half"]["max"]))),
    Figure("single's 1.19e-7", 1.19e-7, lambda ns: _derived("single (float)", "eps")),
    Figure("double's 2.22e-16", 2.22e-16, lambda ns: _derived("double", "eps")),
    Figure("= 3.39e38", 3.39e38, lambda ns: ns["bf16_max"], rtol=2e-3),
    Figure("not 3.40e38", 3.40e38, lambda ns: _printed("bfloat16", "max")),
    Figure("23-bit mantissa", 23, lambda ns: FP32.mantissa_bits),
    Figure("1.797693e308", 1.797693e308, lambda ns: ns["fp64_max"], rtol=1e-6),
    Figure("is 1.80e308", 1.80e308, lambda ns: _derived("double", "max")),
    Figure("1.79e308 (double-double's row copies it)", 1.79e308, lambda ns: _printed("double-double", "max")),
    Figure("2.2251e-308", 2.2251e-308, lambda ns: FP64.min_normal, rtol=1e-4),
    Figure("to 2.23e-308", 2.23e-308, lambda ns: _derived("double", "min_normal")),
    Figure("113-bit", 113, lambda ns: FP128.precision),
    Figure("15-bit exponent", 15, lambda ns: FP128.exponent_bits),
    Figure("range to 1.19e4932", float("inf"), None, why=_NOT_FLOAT),
    Figure("about 107", 107, lambda ns: F.DOUBLE_DOUBLE.precision),
    # FP8 and TF32
    Figure("inputs to 19 bits", 19, lambda ns: ns["tf32_bits"]),
    Figure("numbers up to 448", 448, lambda ns: ns["e4m3_max"]),
    Figure("(largest 57344)", 57344, lambda ns: ns["e5m2_max"]),
    Figure("just 2 mantissa bits", 2, lambda ns: FP8_E5M2.mantissa_bits),
    Figure("epsilon 0.125", 0.125, lambda ns: ns["e4m3_eps"]),
    Figure("TF32 has 19 bits", 19, lambda ns: TF32.bits),
    Figure("FP32's 8-bit exponent", 8, lambda ns: TF32.exponent_bits),
    Figure("10-bit mantissa", 10, lambda ns: TF32.mantissa_bits),
    Figure("epsilon 9.77e-4:", 9.77e-4, lambda ns: ns["tf32_eps"], rtol=1e-3),
    # 3, 4. the number line and rounding
    Figure("spacing of FP16 is already 1", 1, lambda ns: ns["fp16_gap_1024"]),
    Figure("65520 for FP16", 65520, lambda ns: FP16.max + float(F.spacing(FP16.max, FP16)) / 2),
    Figure("(to 448)", 448, lambda ns: FP8_E4M3.max),
    Figure("the tie at 464", 464, lambda ns: FP8_E4M3.max + float(F.spacing(FP8_E4M3.max, FP8_E4M3)) / 2),
    Figure("2.11 gives NaN", 2.11, None, why="torch's release history: pytorch#178817 (April 2026) made the CPU cast "
           "saturate; formats.torch_e4m3_overflow() asks the installed torch, and the notebook prints its answer"),
    Figure("from 2.12 on", 2.12, None, why="torch's release history, as above"),
    # 5. tensor cores
    Figure("two 4 x 4 FP16 matrices", 4, lambda ns: mp.TENSOR_CORES["Volta"].shape.m),
    Figure("two 11-bit significands", 11, lambda ns: FP16.precision),
    Figure("22 bits), and they are summed", 22, lambda ns: 2 * FP16.precision),
    Figure("a 4x4x4 MMA, 64 FMA", 64, lambda ns: mp.TENSOR_CORES["Volta"].shape.fma),
    Figure("with 8 tensor cores", 8, lambda ns: mp.TENSOR_CORES["Volta"].tensor_cores_per_sm),
    Figure("4x8 MMA, 256 FMA", 256, lambda ns: mp.TENSOR_CORES["Ampere"].shape.fma),
    Figure("with 4 per SM", 4, lambda ns: mp.TENSOR_CORES["Ampere"].tensor_cores_per_sm),
    Figure("lecture's 125 TFLOP/s", 125, lambda ns: ns["v100_peak"], rtol=0.01),
    Figure("312 TFLOP/s for the A100", 312, lambda ns: ns["a100_peak"], rtol=0.01),
    Figure("108 x 2048 x 1.4 = 310", 310, lambda ns: ns["a100_at_14"], rtol=0.01),
    Figure("at 1.41 GHz it is 312", 312, lambda ns: ns["a100_peak"], rtol=0.01),
    Figure("TF32 tensor cores do 8x", 8, lambda ns: ns["tf32_x"], rtol=0.01),
    Figure("FP16 and BF16 16x", 16, lambda ns: ns["fp16_x"], rtol=0.01),
    Figure("312 x 8 = 2.5 PFLOPS", 2.5, lambda ns: 2 * ns["dgx_tf32_pf"], rtol=0.01),
    Figure("dense TF32 is 156", 156, lambda ns: hardware.peak_flops("A100", "tf32") / 1e12, rtol=0.01),
    Figure("1.25 PFLOP/s for eight", 1.25, lambda ns: ns["dgx_tf32_pf"], rtol=0.01),
    Figure("(60 FP32", 60, None, why="the lecture's preliminary H100 table, quoted for contrast; the next cell prints "
           "gpudl.hardware's datasheet peaks"),
    Figure("500 TF32, 1000 FP16", 500, None, why="the lecture's preliminary H100 table, as above"),
    # 6. TF32 and the split
    Figure("about 1,000 times less accurate", 1000, lambda ns: ns["tf32_vs_fp32"], rtol=0.5),
    Figure("Two BF16 pieces carry 16 significant bits", 16, lambda ns: 2 * BF16.precision),
    Figure("two TF32 (or FP16) pieces 22", 22, lambda ns: 2 * TF32.precision),
    Figure("close to FP32's 24", 24, lambda ns: FP32.precision),
    Figure("TF32 runs at 8x", 8, lambda ns: ns["tf32_x"], rtol=0.01),
    Figure("take 3/8 = 0.375 of FP32's time", 3 / 8, lambda ns: 3 / ns["tf32_x"], rtol=0.01),
    # 7. FP8
    Figure("With 3 mantissa bits", 3, lambda ns: FP8_E4M3.mantissa_bits),
    Figure("largest value of 448", 448, lambda ns: FP8_E4M3.max),
    # 8. mixed precision
    Figure("ends at 6.0e-8", 6.0e-8, lambda ns: FP16.min_subnormal, rtol=0.01),
    Figure("start at $2^{16} = 65536$", 65536, lambda ns: mp.INIT_SCALE),
    Figure("after 2000 clean steps in a row", 2000, lambda ns: mp.GROWTH_INTERVAL),
    Figure("instead of 2000", 2000, lambda ns: mp.GROWTH_INTERVAL),
    Figure("on average 72% of the gradient entries", 72, lambda ns: 100 * ns["zero_fp16"], rtol=0.05),
    # 9. 2:4 sparsity
    Figure("at most 2 non-zeros", 2, lambda ns: sparsity.KEPT),
    Figure("group of 4 consecutive values", 4, lambda ns: sparsity.GROUP),
    Figure("2 bits of metadata each", 2, lambda ns: sparsity.INDEX_BITS),
    Figure("16b data => 12.5% overhead", 12.5, lambda ns: ns["overhead16"]),
    Figure("8b data => 25% overhead", 25, lambda ns: ns["overhead8"]),
    Figure("take 56.25%", 56.25, lambda ns: ns["dense16"]),
    Figure("and 62.5% of the", 62.5, lambda ns: ns["dense8"]),
    # 10. the benchmark, and the summary
    Figure("an 8192^3 matmul", 8192, lambda ns: _bench_size()),
    Figure("(2^16 = 65536, halve", 65536, lambda ns: mp.INIT_SCALE),
    Figure("after 2000 clean steps)", 2000, lambda ns: mp.GROWTH_INTERVAL),
    # TF32 against FP32 in the lecture's accuracy tables: the ImageNet rows and BERT's SQuAD v2 row
    Figure("F1 76.68 in FP32 and 75.67 in TF32, 1.01 points", 76.68, lambda ns: ns["lecture_bert_squad2_f1"][0]),
    Figure("F1 76.68 in FP32 and 75.67 in TF32, 1.01 points", 75.67, lambda ns: ns["lecture_bert_squad2_f1"][1]),
    Figure("F1 76.68 in FP32 and 75.67 in TF32, 1.01 points", 1.01, lambda ns: -ns["bert_gap"], rtol=1e-3),
    Figure("F1 76.68 in FP32 and 75.67 in TF32, 1.01 points", 1.01, lambda ns: 76.68 - 75.67, rtol=1e-3),
    Figure("none of these ImageNet rows moves more than 0.15", 0.15, lambda ns: ns["largest_gap"], rtol=1e-3),
    Figure("none of these ImageNet rows moves more than 0.15", 0.15,
           lambda ns: max(abs(t - f) for f, t in ns["lecture_top1"].values()), rtol=1e-3),
    # measured on an H100 and an H200: `gpudl bench precision --record` (course/data/bench_precision.json)
    Figure("FP32 ran at 52.0 TFLOP/s", 52.0, lambda ns: _rung("fp32"), atol=0.05, rtol=0),
    Figure("(78% of its 66.9)", 78, lambda ns: 100 * _rung("fp32", "fraction"), atol=0.5, rtol=0),
    Figure("(78% of its 66.9)", 66.9, lambda ns: _rung("fp32", "peak_tflops"), atol=0.05, rtol=0),
    Figure("TF32 at 376 (76%)", 376, lambda ns: _rung("tf32"), atol=0.5, rtol=0),
    Figure("TF32 at 376 (76%)", 76, lambda ns: 100 * _rung("tf32", "fraction"), atol=0.5, rtol=0),
    Figure("FP16 at 677 (68%)", 677, lambda ns: _rung("fp16"), atol=0.5, rtol=0),
    Figure("FP16 at 677 (68%)", 68, lambda ns: 100 * _rung("fp16", "fraction"), atol=0.5, rtol=0),
    Figure("BF16 at 698 (71%)", 698, lambda ns: _rung("bf16"), atol=0.5, rtol=0),
    Figure("BF16 at 698 (71%)", 71, lambda ns: 100 * _rung("bf16", "fraction"), atol=0.5, rtol=0),
    Figure("at 1,257 (64% of 1,979)", 1257, lambda ns: _rung("fp8 e4m3 (_scaled_mm)"), atol=0.5, rtol=0),
    Figure("at 1,257 (64% of 1,979)", 64, lambda ns: 100 * _rung("fp8 e4m3 (_scaled_mm)", "fraction"), atol=0.5,
           rtol=0),
    Figure("at 1,257 (64% of 1,979)", 1979, lambda ns: _rung("fp8 e4m3 (_scaled_mm)", "peak_tflops"), atol=0.5,
           rtol=0),
    Figure("bought 7.22x (FP32 to TF32)", 7.22, lambda ns: _rung("tf32") / _rung("fp32"), atol=0.005, rtol=0),
    Figure("1.80x\n(TF32 to FP16)", 1.80, lambda ns: _rung("fp16") / _rung("tf32"), atol=0.005, rtol=0),
    Figure("1.86x (FP16 to FP8)", 1.86, lambda ns: _rung("fp8 e4m3 (_scaled_mm)") / _rung("fp16"), atol=0.005, rtol=0),
    Figure("the peaks promise 7.4x, 2x and 2x", 7.4,
           lambda ns: hardware.peak_flops("H100-SXM", "tf32") / hardware.peak_flops("H100-SXM", "fp32"),
           atol=0.05, rtol=0),
    Figure("the peaks promise 7.4x, 2x and 2x", 2,
           lambda ns: hardware.peak_flops("H100-SXM", "fp8") / hardware.peak_flops("H100-SXM", "fp16")),
    Figure("FP16 2:4 ran at 1,008 dense-equivalent", 1008, lambda ns: _rung("fp16 2:4 sparse"), atol=0.5, rtol=0),
    Figure("51% of the sparse peak", 51, lambda ns: 100 * _rung("fp16 2:4 sparse", "fraction"), atol=0.5, rtol=0),
    Figure("1.49x the dense FP16\nrung", 1.49, lambda ns: _rung("fp16 2:4 sparse") / _rung("fp16"), atol=0.005, rtol=0),
    Figure("at 8192 (1.45x)", 1.45, lambda ns: _sparse(8192, "speedup"), atol=0.005, rtol=0),
    Figure("and 16384 (1.10x)", 1.10, lambda ns: _sparse(16384, "speedup"), atol=0.005, rtol=0),
    Figure("about 0.58 ms whatever the size", 0.58, lambda ns: _sparse(2048, "sparse_ms"), atol=0.01, rtol=0),
    Figure("about 0.58 ms whatever the size", 0.58, lambda ns: _sparse(4096, "sparse_ms"), atol=0.01, rtol=0),
    Figure("0.05x and 0.32x of\ndense", 0.05, lambda ns: _sparse(2048, "speedup"), atol=0.005, rtol=0),
    Figure("0.05x and 0.32x of\ndense", 0.32, lambda ns: _sparse(4096, "speedup"), atol=0.005, rtol=0),
    Figure("median 67 ULP of the FP32 result at n = 1024", 67, lambda ns: _tf32_ulp("rne"), atol=0.5, rtol=0),
    Figure("against 84 for ties away from zero", 84, lambda ns: _tf32_ulp("rna"), atol=0.5, rtol=0),
    Figure("and 9,862 for\ntruncation", 9862, lambda ns: _tf32_ulp("rtz"), atol=0.5, rtol=0),
    # the H200's entry of the same record
    Figure("which an\n8192^3 matmul hardly tests", 8192, lambda ns: max(r["n"] for r in recorded("precision", "ladder", "H200"))),
    Figure("FP32 at 51.3 TFLOP/s (77%)", 51.3, lambda ns: _rung("fp32", gpu="H200"), atol=0.05, rtol=0),
    Figure("FP32 at 51.3 TFLOP/s (77%)", 77, lambda ns: 100 * _rung("fp32", "fraction", "H200"), atol=0.5, rtol=0),
    Figure("TF32 at 353 (71%)", 353, lambda ns: _rung("tf32", gpu="H200"), atol=0.5, rtol=0),
    Figure("TF32 at 353 (71%)", 71, lambda ns: 100 * _rung("tf32", "fraction", "H200"), atol=0.5, rtol=0),
    Figure("FP16 at 651 (66%)", 651, lambda ns: _rung("fp16", gpu="H200"), atol=0.5, rtol=0),
    Figure("FP16 at 651 (66%)", 66, lambda ns: 100 * _rung("fp16", "fraction", "H200"), atol=0.5, rtol=0),
    Figure("BF16 at 699 (71%)", 699, lambda ns: _rung("bf16", gpu="H200"), atol=0.5, rtol=0),
    Figure("BF16 at 699 (71%)", 71, lambda ns: 100 * _rung("bf16", "fraction", "H200"), atol=0.5, rtol=0),
    Figure("FP8 at 1,266 (64%)", 1266, lambda ns: _rung("fp8 e4m3 (_scaled_mm)", gpu="H200"), atol=0.5, rtol=0),
    Figure("FP8 at 1,266 (64%)", 64, lambda ns: 100 * _rung("fp8 e4m3 (_scaled_mm)", "fraction", "H200"), atol=0.5,
           rtol=0),
    Figure("steps of 6.88x, 1.84x and\n1.95x", 6.88, lambda ns: _rung("tf32", gpu="H200") / _rung("fp32", gpu="H200"),
           atol=0.005, rtol=0),
    Figure("steps of 6.88x, 1.84x and\n1.95x", 1.84, lambda ns: _rung("fp16", gpu="H200") / _rung("tf32", gpu="H200"),
           atol=0.005, rtol=0),
    Figure("steps of 6.88x, 1.84x and\n1.95x", 1.95,
           lambda ns: _rung("fp8 e4m3 (_scaled_mm)", gpu="H200") / _rung("fp16", gpu="H200"), atol=0.005, rtol=0),
    Figure("FP16 2:4 ran at 1,029 dense-equivalent TFLOP/s", 1029, lambda ns: _rung("fp16 2:4 sparse", gpu="H200"),
           atol=0.5, rtol=0),
    Figure("52% of the sparse peak and 1.58x its dense FP16\nrung", 52,
           lambda ns: 100 * _rung("fp16 2:4 sparse", "fraction", "H200"), atol=0.5, rtol=0),
    Figure("52% of the sparse peak and 1.58x its dense FP16\nrung", 1.58,
           lambda ns: _rung("fp16 2:4 sparse", gpu="H200") / _rung("fp16", gpu="H200"), atol=0.005, rtol=0),
    Figure("the crossover again between 4096 and 8192", 4096, lambda ns: _crossover("H200")[0]),
    Figure("the crossover again between 4096 and 8192", 8192, lambda ns: _crossover("H200")[1]),
    Figure("the crossover again between 4096 and 8192", 4096, lambda ns: _crossover("H100-SXM")[0]),
    Figure("the crossover again between 4096 and 8192", 8192, lambda ns: _crossover("H100-SXM")[1]),
    Figure("(0.07x and 0.43x of dense)", 0.07, lambda ns: _sparse(2048, "speedup", "H200"), atol=0.005, rtol=0),
    Figure("(0.07x and 0.43x of dense)", 0.43, lambda ns: _sparse(4096, "speedup", "H200"), atol=0.005, rtol=0),
    Figure("won at 8192 (1.42x) and 16384 (1.34x)", 1.42, lambda ns: _sparse(8192, "speedup", "H200"), atol=0.005,
           rtol=0),
    Figure("won at 8192 (1.42x) and 16384 (1.34x)", 1.34, lambda ns: _sparse(16384, "speedup", "H200"), atol=0.005,
           rtol=0),
    Figure("took 0.41 and 0.44 ms", 0.41, lambda ns: _sparse(2048, "sparse_ms", "H200"), atol=0.005, rtol=0),
    Figure("took 0.41 and 0.44 ms", 0.44, lambda ns: _sparse(4096, "sparse_ms", "H200"), atol=0.005, rtol=0),
    Figure("less than the H100's 0.58 ms", 0.58, lambda ns: _sparse(2048, "sparse_ms"), atol=0.01, rtol=0),
    Figure("less than the H100's 0.58 ms", 0.58, lambda ns: _sparse(4096, "sparse_ms"), atol=0.01, rtol=0),
    Figure("1.34x against the H100's 1.10x", 1.34, lambda ns: _sparse(16384, "speedup", "H200"), atol=0.005, rtol=0),
    Figure("1.34x against the H100's 1.10x", 1.10, lambda ns: _sparse(16384, "speedup"), atol=0.005, rtol=0),
    Figure("gave the same medians (67, 84 and\n9,862 ULP)", 67, lambda ns: _tf32_ulp("rne", "H200"), atol=0.5, rtol=0),
    Figure("gave the same medians (67, 84 and\n9,862 ULP)", 84, lambda ns: _tf32_ulp("rna", "H200"), atol=0.5, rtol=0),
    Figure("gave the same medians (67, 84 and\n9,862 ULP)", 9862, lambda ns: _tf32_ulp("rtz", "H200"), atol=0.5,
           rtol=0),
    Figure("9,862 ULP), as do all of its TF32 rows", 9862,          # NaN unless every TF32 row equals the H100's
           lambda ns: _tf32_ulp("rtz", "H200") * _same_tf32_rows("H200"), atol=0.5, rtol=0),
]
