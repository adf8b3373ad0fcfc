"""Figures quoted by course/03_gemm_blocking.ipynb."""
import inspect

from gpudl import gemm, hardware
from gpudl_instructor.references import lab03 as ref

from figures import Figure

V100_TENSOR_CORES_PER_SM = 8          # the lecture's "1 SM has 8 TC"
_ROWS = {"| a 32 KiB L1 cache, float64 | 4096 | 36 | 35.6 |": 32 * 1024 // 8,
         "| a 1 MiB L2 cache, float64 | 131072 | 209 | 195.0 |": 2**20 // 8,
         "| an H100 SM's 228 KiB shared memory, FP16 | 116736 | 197 | 186.2 |": 228 * 1024 // 2}


def _recorded_model(ns):
    """The lecture's recorded model counts, if every one is the reference's (else NaN)."""
    want = [ref.blocked_traffic(64, b) for b in ns["traffic_blocks"]]
    return ns["model_words"][ns["traffic_blocks"].index(16)] if ns["model_words"] == want else float("nan")


def _triton(n: int, dtype: str, key: str) -> float:
    """A Triton row of the H200's `gpudl bench gemm --record` (course/data/bench_gemm.json): the autotuned
    matmul_triton against cuBLAS at n^3 (key "value" is its TFLOP/s; "config" the autotuner's choice)."""
    import re

    from figures import recorded

    rows = [r for r in recorded("gemm", gpu="H200")
            if r["section"] == "triton" and r["case"].startswith(f"matmul_triton {n}^3 {dtype} ")]
    assert len(rows) == 1, rows
    if key == "config":
        return re.search(r"autotuned (\d+x\d+x\d+ .*)\)", rows[0]["case"]).group(1)
    return rows[0][key]


def _tile(n: int, dtype: str, part: int) -> int:
    """A number of the autotuner's choice at n^3: BLOCK_M (0), BLOCK_N (1), stages (2)."""
    import re

    m = re.match(r"(\d+)x(\d+)x\d+ (?:tma )?w\d+ s(\d+)", _triton(n, dtype, "config"))
    return int(m.group(part + 1))


FIGURES = [
    Figure("ten elements in blocks of four take three programs", 3, lambda ns: ns["triton"].cdiv(10, 4)),
    Figure("the last program masks two of its lanes", 2, lambda ns: ns["triton"].cdiv(10, 4) * 4 - 10),
    Figure("run lasts about 10 us, much of it fixed", 10,
           lambda ns: 2 * 1024**3 / (_triton(1024, "fp16", "value") * 1e12) * 1e6, rtol=0.05),
    Figure("it chose a 128 x 64\ntile with 7 stages", 128, lambda ns: _tile(1024, "fp16", 0)),
    Figure("it chose a 128 x 64\ntile with 7 stages", 64, lambda ns: _tile(1024, "fp16", 1)),
    Figure("it chose a 128 x 64\ntile with 7 stages", 7, lambda ns: _tile(1024, "fp16", 2)),
    Figure("reached 0.89x cuBLAS in FP16 and 0.85x in BF16 at 1024^3", 0.89,
           lambda ns: _triton(1024, "fp16", "triton / cuBLAS"), atol=0.005, rtol=0),
    Figure("reached 0.89x cuBLAS in FP16 and 0.85x in BF16 at 1024^3", 0.85,
           lambda ns: _triton(1024, "bf16", "triton / cuBLAS"), atol=0.005, rtol=0),
    Figure("(0.88x for both replayed from a\nCUDA graph)", 0.88,
           lambda ns: _triton(1024, "fp16", "kernels (CUDA graph)"), atol=0.005, rtol=0),
    Figure("(0.88x for both replayed from a\nCUDA graph)", 0.88,
           lambda ns: _triton(1024, "bf16", "kernels (CUDA graph)"), atol=0.005, rtol=0),
    Figure("against 0.98x at 4096^3", 0.98, lambda ns: _triton(4096, "fp16", "triton / cuBLAS"), atol=0.005, rtol=0),
    Figure("against 0.98x at 4096^3", 0.98, lambda ns: _triton(4096, "bf16", "triton / cuBLAS"), atol=0.005, rtol=0),
    Figure("`q = 2 n^3 / m ~ 2`", 2, lambda ns: 2 * 4096**3 / gemm.naive_traffic(4096), rtol=0.01),
    Figure("are worst, by about 22x", 22, lambda ns: ns["words"]["jki"] / ns["words"]["ikj"], rtol=0.03),
    Figure("are worst, by about 22x", 22, lambda ns: ns["words"]["kji"] / ns["words"]["ikj"], rtol=0.03),
    *[Figure(row, words, lambda ns, w=words: w) for row, words in _ROWS.items()],
    *[Figure(row, int(row.split("|")[3]), lambda ns, w=words: ref.optimal_block(w)) for row, words in _ROWS.items()],
    *[Figure(row, float(row.split("|")[4]), lambda ns, w=words: ref.computational_intensity(4096, ref.optimal_block(w)),
             rtol=0.0, atol=0.05) for row, words in _ROWS.items()],
    Figure("for b = 16, N = 4: (2 x 4 + 2) x 64^2 = 40960 words", 40960, _recorded_model),
    Figure("it needs about **1.5x** the room of the three tiles", 1.5,
           lambda ns: inspect.signature(gemm.lru_capacity_for_block).parameters["slack"].default),
    Figure("the simulation moves about 2.5x the model", 2.5,
           lambda ns: gemm.traffic_table(64, [2], line_words=4, model=ref.blocked_traffic)[0]["simulated/model"],
           rtol=0.03),
    Figure("on Volta, a 4 x 4 x 4 product per clock per tensor core", 4,
           lambda ns: (hardware.SPECS["V100"].tensor_fma_per_sm["fp16"] / V100_TENSOR_CORES_PER_SM) ** (1 / 3),
           rtol=1e-9),
    Figure("give the 512 FMA per clock per SM", 512, lambda ns: hardware.SPECS["V100"].tensor_fma_per_sm["fp16"]),
    Figure("behind its 125 TFLOP/s", 125, lambda ns: hardware.peak_flops("V100", "fp16") / 1e12, rtol=5e-3),
    # MAGMA's testing_dgemm on a P100 PCIe (the lecture's log): the peak at the clock it prints, recomputed here
    Figure("56 SMs x 32 FP64 FMA x 2 x 1328.5 MHz = **4,761 GFLOP/s**", 4761, lambda ns: ns["p100_fp64_peak_gflops"],
           rtol=2e-4),
    Figure("56 SMs x 32 FP64 FMA x 2 x 1328.5 MHz = **4,761 GFLOP/s**", 4761, lambda ns: 56 * 32 * 2 * 1.3285,
           rtol=2e-4),
    Figure("56 SMs x 32 FP64 FMA x 2 x 1328.5 MHz = **4,761 GFLOP/s**", 56, lambda ns: hardware.SPECS["P100"].sms),
    Figure("56 SMs x 32 FP64 FMA x 2 x 1328.5 MHz = **4,761 GFLOP/s**", 32,
           lambda ns: hardware.SPECS["P100"].cuda_fma_per_sm["fp64"]),
    Figure("cuBLAS's DGEMM reaches 4,536.77 GFLOP/s at N = 6000", 4536.77,
           lambda ns: max(r[1] for r in ns["dgemm_run"].values()), rtol=0),
    Figure("cuBLAS's DGEMM reaches 4,536.77 GFLOP/s at N = 6000", 6000,
           lambda ns: max(ns["dgemm_run"], key=lambda n: ns["dgemm_run"][n][1])),
    Figure("**95%** of it", 95, lambda ns: 100 * ns["dgemm_share"]["cuBLAS"], rtol=0.01),
    Figure("**95%** of it", 95, lambda ns: 100 * 4536.77 / (56 * 32 * 2 * 1328.5e-3), rtol=0.01),
    Figure("MAGMA's own GEMM 79% at best (3,746.67 GFLOP/s)", 79, lambda ns: 100 * ns["dgemm_share"]["MAGMA"],
           rtol=0.01),
    Figure("MAGMA's own GEMM 79% at best (3,746.67 GFLOP/s)", 3746.67,
           lambda ns: max(r[0] for r in ns["dgemm_run"].values()), rtol=0),
]
