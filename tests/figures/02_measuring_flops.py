"""Figures quoted by course/02_measuring_flops.ipynb (the GEMM model's by lab 02's references)."""
import inspect
import statistics

from gpudl import bench, hardware
from gpudl_instructor.references.lab02 import gemm_flops, gemm_waves

from figures import Figure, recorded, rung, value

T = 1e12

def _fp32_recorded(ns) -> float:
    """The H200's FP32 rung at 8192^3 that `gpudl bench precision --record` kept (course/data), TFLOP/s;
    NaN unless the number cell 7 types in (h200_fp32_measured) rounds to the same."""
    rec = rung("fp32", gpu="H200")
    return rec if round(rec) == round(ns["h200_fp32_measured"] / 1e12) else float("nan")


def _matmul(dtype: str, key: str = "TFLOP/s", n: int = 8192) -> float:
    """The H200's `gpudl bench matmul --record` row (course/data/bench_matmul.json) of torch.matmul."""
    return value("matmul", key, "H200", dtype=dtype, n=n)


def _startup(step: str) -> float:
    """The median ms of one step of `gpudl bench startup --record` on the H200 (course/data/bench_startup.json)."""
    return value("startup", "median ms", "H200", step=step)


def _host_us(ns) -> list[float]:
    """The record's host time per torch.matmul call, as section 7's cell prints it (NaN where they differ)."""
    kept = [r["host us/call"] for r in recorded("matmul", gpu="H200") if r["impl"] == "torch.matmul"]
    return kept if kept == ns["host_us"] else [float("nan")]


def _lecture_timer(key: str) -> float:
    """The lecture's timer in the H200's matmul record (its last row), as cell 7 reads it."""
    from gpudl.benchmarks.matmul import LECTURE_TIMER

    return value("matmul", key, "H200", impl=LECTURE_TIMER)


def _rounds() -> int:
    """How many rounds the timers took turns for in the H200's matmul record (its note says)."""
    import re

    from gpudl import benchmarks

    return int(re.search(r"take turns for (\d+) round", benchmarks.recorded("matmul")["H200"]["notes"][0]).group(1))


def _spread() -> float:
    """The largest spread in % of one timer's per-round medians over the record's torch.matmul rows."""
    rows = [r for r in recorded("matmul", gpu="H200") if r["impl"] == "torch.matmul"]
    return max(max(r["gpudl spread %"], r["do_bench spread %"]) for r in rows)


FIGURES = [
    Figure("8192^3, where FP32 measured 51 TFLOP/s", 51, _fp32_recorded, atol=0.5, rtol=0),
    # How soon a call returns: the matmul record's host time per call, every dtype and size
    Figure("returns: after 17 to 25 microseconds", 17, lambda ns: min(_host_us(ns)), atol=0.5, rtol=0),
    Figure("returns: after 17 to 25 microseconds", 25, lambda ns: max(_host_us(ns)), atol=0.5, rtol=0),
    Figure("(t1 - t0: the launch, ~20 us)", 20, lambda ns: statistics.median(_host_us(ns)), rtol=0.15),
    # The lecture's code and its figures
    Figure("reports about **5,250 TFLOP/s** for a 6000^3 FP32 matmul", 5250, lambda ns: _lecture_timer("TFLOP/s"),
           rtol=0.01),
    Figure("The H200's FP32 peak is 67 TFLOP/s", 67, lambda ns: hardware.peak_flops("H200", "fp32") / T, rtol=0.01),
    Figure("the matmul really runs at about 50", 50, lambda ns: ns["fp32_model_6000"] / T, rtol=0.05),
    Figure("(measured at 8192^3: 51;", 51, lambda ns: ns["h200_fp32_measured"] / T),       # the cell's record
    Figure("Its printout: about 70 GFLOP/s", 70, lambda ns: ns["lecture_cpu_gflops"][2000], rtol=0.05),
    Figure("Its printout: about 70 GFLOP/s", 70, lambda ns: ns["lecture_cpu_gflops"][6000], rtol=0.05),
    Figure("are sound: about 70 GFLOP/s", 70, lambda ns: ns["lecture_cpu_gflops"][4000], rtol=0.05),
    Figure("this printed 7,077 GFLOP/s", 7077, lambda ns: ns["lecture_gpu_tflops"] * 1e3, rtol=1e-4),
    Figure("432 GFLOP in 0.061 s", 432, lambda ns: gemm_flops(6000, 6000, 6000) / 1e9),
    Figure("432 GFLOP in 0.061 s", 0.061, lambda ns: ns["lecture_gpu_s"], rtol=1e-3),
    Figure("But 7.08 TFLOP/s is", 7.08, lambda ns: ns["lecture_gpu_tflops"], rtol=1e-3),
    Figure("a Tesla P100 (74-76%, below)", 74,
           lambda ns: 100 * ns["lecture_gpu_tflops"] * T / ns["p100_pcie_fp32"][1328.5], rtol=0.01),
    Figure("a Tesla P100 (74-76%, below)", 76,
           lambda ns: 100 * ns["lecture_gpu_tflops"] * T / ns["p100_pcie_fp32"][1303], rtol=0.01),
    Figure("prints about 5,250,000 GFLOP/s (5,250 TFLOP/s), 78\ntimes the H200's FP32 peak", 5250000,
           lambda ns: ns["h200_lecture_code_tflops"] * 1e3, rtol=0.01),
    Figure("prints about 5,250,000 GFLOP/s (5,250 TFLOP/s), 78\ntimes the H200's FP32 peak", 5250,
           lambda ns: _lecture_timer("TFLOP/s"), rtol=0.01),
    Figure("prints about 5,250,000 GFLOP/s (5,250 TFLOP/s), 78\ntimes the H200's FP32 peak", 78,
           lambda ns: ns["times_peak"], atol=0.5, rtol=0),
    Figure("the call returned after 82 us", 82, lambda ns: _lecture_timer("host us/call"), atol=0.5, rtol=0),
    Figure("product takes about 8.5 ms", 8.5, lambda ns: 2 * 6000**3 / (_matmul("fp32") * T) * 1e3, rtol=0.02),
    Figure("on a simulated GPU running FP32 at 51 TFLOP/s", 51, lambda ns: ns["h200_fp32_measured"] / T),
    # First calls in a new process: the startup record
    Figure("135 ms for the context", 135, lambda ns: _startup("CUDA context (first tensor on the GPU)"), atol=0.5, rtol=0),
    Figure("93 ms for the first 4096^3 BF16 matmul", 93, lambda ns: _startup("first matmul 4096^3"), atol=0.5, rtol=0),
    Figure("against 0.31 ms for the second", 0.31, lambda ns: _startup("second matmul 4096^3"), atol=0.005, rtol=0),
    Figure("123 ms for the first cuDNN", 123, lambda ns: _startup("first conv2d 3x3, 64 ch, 56 x 56"), atol=0.5, rtol=0),
    Figure("convolution against 0.26 ms", 0.26, lambda ns: _startup("second conv2d"), atol=0.005, rtol=0),
    Figure("4.0 s for `import torch`", 4.0, lambda ns: _startup("import torch") / 1e3, atol=0.05, rtol=0),
    Figure("printed below): 135 ms", 135, lambda ns: ns["startup_record"].rows[1]["median ms"], atol=0.5, rtol=0),
    # Timing
    Figure("simulated work of 4 ms", 4, lambda ns: ns["runs"]["simulated kernel, 4 ms"].median * 1e3, rtol=0.25),
    Figure("whose first call costs 50 ms of host time", 50, None,
           why="an input of the simulation (first_call_s=0.05), not a result; the host's sleep makes its "
               "measured value load-dependent"),
    Figure("one matmul still spread by up to 5.6%", 5.6, lambda ns: _spread(), atol=0.05, rtol=0),
    Figure("for 11 rounds, each round after the same load", 11, lambda ns: _rounds()),
    Figure("for 25 ms, then time ~100 ms of runs", 25,
           lambda ns: inspect.signature(bench.time_cuda).parameters["warmup_s"].default * 1e3),
    Figure("for 25 ms, then time ~100 ms of runs", 100,
           lambda ns: inspect.signature(bench.time_cuda).parameters["min_time_s"].default * 1e3),
    # The L2 cache
    Figure("(50 MB on an H100", 50, lambda ns: hardware.SPECS["H100-SXM"].l2_kib / 1024),
    Figure("60 MB on an H200", 60, lambda ns: hardware.SPECS["H200"].l2_kib / 1024),
    Figure("8192^2 FP32 inputs are 268 MB each", 268, lambda ns: 8192**2 * hardware.bytes_per_element("fp32") / 1e6,
           rtol=3e-3),
    # Peaks
    Figure("108 SMs x 2048 FLOP x 1.41 GHz = 312 TFLOP/s", 312, lambda ns: hardware.peak_flops("A100", "fp16") / T,
           rtol=2e-3),
    Figure("against 19.5 TFLOP/s for FP32", 19.5, lambda ns: hardware.peak_flops("A100", "fp32") / T, rtol=2e-3),
    Figure("156 TFLOP/s on an A100", 156, lambda ns: hardware.peak_flops("A100", "tf32") / T, rtol=2e-3),
    Figure("BF16 8192^3 at 678 TFLOP/s, FP16 at 654, FP32 at 51", 678, lambda ns: _matmul("bf16"), atol=0.5, rtol=0),
    Figure("BF16 8192^3 at 678 TFLOP/s, FP16 at 654, FP32 at 51", 654, lambda ns: _matmul("fp16"), atol=0.5, rtol=0),
    Figure("BF16 8192^3 at 678 TFLOP/s, FP16 at 654, FP32 at 51", 51, lambda ns: _matmul("fp32"), atol=0.5, rtol=0),
    Figure("FP16 at 654, FP32 at 51)", 51, lambda ns: ns["h200_fp32_measured"] / T),
    # Why small matrices are far from peak
    Figure("N = 1536 gives 144 tiles", 144, lambda ns: gemm_waves(1536, 1536, 132).tiles),
    Figure("a second with 12 tiles and 120 idle SMs", 12, lambda ns: gemm_waves(1536, 1536, 132).tiles - 132),
    Figure("a second with 12 tiles and 120 idle SMs", 120,
           lambda ns: 2 * 132 - gemm_waves(1536, 1536, 132).tiles),
    Figure("a wave efficiency of 144 / 264 = 0.55", 0.55, lambda ns: gemm_waves(1536, 1536, 132).efficiency,
           rtol=0.01),
    Figure("the second wave at 50%", 50, lambda ns: 100 * (12 - 8) / 8),
    Figure("(N = 1024: 64 tiles)", 64, lambda ns: gemm_waves(1024, 1024, 132).tiles),
    Figure("finish N = 1024 in 2 microseconds at peak", 2,
           lambda ns: gemm_flops(1024, 1024, 1024) / hardware.peak_flops("H100-SXM", "bf16") * 1e6, rtol=0.1),
    Figure("(the model below takes 5)", 5, lambda ns: ns["launch_s"] * 1e6),
    Figure("a 256^3 BF16 matmul is 34 MFLOP", 34, lambda ns: gemm_flops(256, 256, 256) / 1e6, rtol=0.02),
    Figure("about 34 ns of work at 989 TFLOP/s", 34, lambda ns: ns["small_bf16_s"] * 1e9, rtol=0.02),
    Figure("about 34 ns of work at 989 TFLOP/s", 989, lambda ns: ns["peak16"] / T, rtol=1e-3),
    Figure("The launch dominates by a factor of about 150", 150, lambda ns: ns["launch_s"] / ns["small_bf16_s"],
           rtol=0.03),
    # Section 2's 6000^3, on the plateau
    Figure("its 47 x 47 = 2,209 tiles", 2209, lambda ns: ns["w6000"]["tiles"]),
    Figure("fill 17 waves at 98%", 17, lambda ns: ns["w6000"]["waves"]),
    Figure("fill 17 waves at 98%", 98, lambda ns: 100 * ns["w6000"]["efficiency"], rtol=5e-3),
    Figure("has 4,096 tiles in 32 waves at 97%", 4096, lambda ns: ns["w8192"]["tiles"]),
    Figure("has 4,096 tiles in 32 waves at 97%", 32, lambda ns: ns["w8192"]["waves"]),
    Figure("has 4,096 tiles in 32 waves at 97%", 97, lambda ns: 100 * ns["w8192"]["efficiency"], rtol=5e-3),
    Figure("wastes only 0.5% of the tile work", 0.5, lambda ns: 100 * ns["edge_waste_6000"], rtol=0.1),
    Figure("at about **50 TFLOP/s**", 50, lambda ns: ns["fp32_model_6000"] / T, rtol=0.05),
]
