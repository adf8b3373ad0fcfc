"""The figures course/09_profiling_and_inference.ipynb quotes, and where each comes from."""
from __future__ import annotations

from figures import Figure

from gpudl import conv, profiling
from gpudl_instructor.references.lab01 import batch_latency


def _share(what: str) -> float:
    return next(r["time_pct"] for r in profiling.lecture_rows() if r["what"] == what)


def _per_iteration(what: str) -> int:
    return next(r["per_iteration"] for r in profiling.lecture_rows() if r["what"] == what)


FIGURES = [
    # the lecture's gpukernsum, recomputed from its printed totals and counts
    Figure("Batch norm alone takes 22% of the GPU's time", 22, lambda ns: _share("batch norm (inference)")),
    Figure("more than the GEMM's 15.9%", 15.9, lambda ns: _share("GEMM (CUTLASS, TF32 tensor cores)")),
    Figure("together take 33.5%", 33.5, lambda ns: ns["bn_and_layout"]),
    Figure("memory-bound elementwise kernels take 57.3%", 57.3, lambda ns: ns["elementwise"]),
    Figure("about 1.08 s of GPU time", 1.08, lambda ns: ns["gpu_time_s"], rtol=0.005),
    Figure("share the divisor 100", 100, lambda ns: ns["iterations"]),
    Figure("53 batch norms", 53, lambda ns: _per_iteration("batch norm (inference)")),
    Figure("49 ReLUs", 49, lambda ns: _per_iteration("clamp (ReLU)")),
    Figure("16 residual adds", 16, lambda ns: _per_iteration("add (residual)")),
    # the lecture's nvtxkernsum for layer1
    Figure("10 convolutions and 10 batch norms", 10, lambda ns: ns["convs"]),
    Figure("the seven 1x1 convolutions", 7, lambda ns: ns["counts"]["GEMM"]),
    Figure("the three 3x3", 3, lambda ns: ns["counts"]["implicit-GEMM convolution"]),
    Figure("more than 10x slower", 10, None,
           why="the lecture's statement of Nsight Compute's overhead ('can take over 10x longer to execute')"),
    # fusion
    Figure("about 2.3x", 2.3, lambda ns: ns["predicted"], rtol=0.02),
    Figure("to about 1.7 FLOP/byte", 1.7, lambda ns: ns["fused"].intensity, rtol=0.03),
    Figure("it removes bytes, four of every seven", 4, lambda ns: 7 * (1 - ns["fused"].bytes / sum(o.bytes for o in ns["ops"])),
           rtol=1e-3),
    # INT8
    Figure("step of about 0.8", 0.8, lambda ns: ns["steps"]["max"], rtol=0.06),
    Figure("about twenty times finer", 20, lambda ns: ns["steps"]["max"] / ns["steps"]["percentile"], rtol=0.05),
    Figure("$127^2 = 16129$", 16129, lambda ns: 127 ** 2),
    Figure("about 133,000 worst-case terms", 133_000, lambda ns: ns["products_to_overflow"], rtol=0.01),
    Figure("multiplying row 7 of the first layer by 256", 256, lambda ns: ns["FACTOR"]),
    # tuning and batching
    Figure("from 0.26 ms for Winograd", 0.26, lambda ns: conv.LECTURE_GV100_3X3["WINOGRAD"][0]),
    Figure("to 45 ms for FFT", 45, lambda ns: conv.LECTURE_GV100_3X3["FFT"][0], rtol=0.01),
    Figure("a frame is out 33 ms after it arrives", 33, lambda ns: batch_latency(30, 1) * 1e3, rtol=0.02),
    Figure("at 2 frames per batch 67 ms", 67, lambda ns: batch_latency(30, 2) * 1e3, rtol=0.01),
]
