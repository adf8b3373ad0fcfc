"""Figures quoted by course/01_performance_basics.ipynb."""
import inspect

from gpudl import hardware
from gpudl_instructor.references import lab01

from figures import Figure

T = 1e12

FIGURES = [
    # 1. CPU, GPU
    Figure("~35.6 FP32", 35.6, lambda ns: hardware.peak_flops("RTX3090", "fp32") / T, rtol=2e-3),
    Figure("~142 with tensor cores", 142, None,
           why="the deck's RTX 3090 figure with FP16 accumulation, which gpudl does not model (it keeps the "
               "FP32-accumulate rate frameworks use; see hardware.SPECS['RTX3090'])"),
    Figure("~6.9 FP32", 6.9, None, why="the deck's CPU figure; gpudl models GPUs only"),
    # 2. The 30 FPS question
    Figure("33 ms, 66 ms, 1 s or 2 s", 33, lambda ns: ns["fps_latency_ms"][1], rtol=0.02),
    Figure("33 ms, 66 ms, 1 s or 2 s", 66, lambda ns: ns["fps_latency_ms"][2], rtol=0.02),
    Figure("33 ms, 66 ms, 1 s or 2 s", 1, lambda ns: ns["fps_latency_ms"][30] / 1e3),
    Figure("33 ms, 66 ms, 1 s or 2 s", 2, lambda ns: ns["fps_latency_ms"][60] / 1e3),
    # 3. Compute bandwidth, and the lecture's 512 GOPs slip
    Figure("doing one operation per clock give 1024 GOP/s", 1024, lambda ns: ns["compute_gops"][1]),
    Figure("two operations per clock give **2,048 GOP/s**", 2048, lambda ns: ns["compute_gops"][2]),
    Figure("would be one operation every **2** clocks", 2, lambda ns: ns["clocks_per_op_at_512"]),
    Figure("= 512 GOPs", 512, None, why="the lecture's slip, quoted to be corrected by the two figures above"),
    Figure("at 1.53 GHz, **125 TFLOP/s**", 125, lambda ns: hardware.peak_flops("V100", "fp16") / T, rtol=5e-3),
    Figure("= **312 TFLOP/s** in FP16 and BF16", 312, lambda ns: hardware.peak_flops("A100", "bf16") / T, rtol=2e-3),
    Figure("156 in TF32", 156, lambda ns: hardware.peak_flops("A100", "tf32") / T, rtol=2e-3),
    Figure("only 19.5 in true FP32", 19.5, lambda ns: hardware.peak_flops("A100", "fp32") / T, rtol=2e-3),
    # The lectures' other peak figures
    Figure("**66.9**, **494.7** and **989.4**", 66.9, lambda ns: ns["h100_datasheet"]["fp32"] / T, rtol=1e-3),
    Figure("**66.9**, **494.7** and **989.4**", 494.7, lambda ns: ns["h100_datasheet"]["tf32"] / T, rtol=1e-3),
    Figure("**66.9**, **494.7** and **989.4**", 989.4, lambda ns: ns["h100_datasheet"]["bf16"] / T, rtol=1e-3),
    Figure("about 1.78 GHz for FP32", 1.78, lambda ns: ns["h100_implied_clock_ghz"]["fp32"], rtol=3e-3),
    Figure("1.85 GHz for the tensor", 1.85, lambda ns: ns["h100_implied_clock_ghz"]["bf16"], rtol=3e-3),
    Figure("1.85 GHz for the tensor", 1.85, lambda ns: ns["h100_implied_clock_ghz"]["tf32"], rtol=3e-3),
    Figure("x 1.53 GHz = **125** TFLOP/s", 125, lambda ns: ns["v100_tensor_tflops"][1530], rtol=5e-3),
    Figure("x 1462 MHz ≈ **120**", 120, lambda ns: ns["v100_tensor_tflops"][1462], rtol=5e-3),
    Figure("dense TF32 is 156 x 8 = **1.25 PF**", 1.25, lambda ns: ns["dgx_a100_pflops"][("tf32", False)], rtol=5e-3),
    Figure("312 TFLOP/s is the A100's TF32 rate *with 2:4 sparsity*", 312,
           lambda ns: hardware.peak_flops("A100", "tf32", sparse=True) / T, rtol=2e-3),
    Figure("dense FP16 is 2.5 PF", 2.5, lambda ns: ns["dgx_a100_pflops"][("fp16", False)], rtol=5e-3),
    Figure("the box's \"5 petaFLOPS AI\" is FP16 with sparsity", 5, lambda ns: ns["dgx_a100_pflops"][("fp16", True)],
           rtol=5e-3),
    # Memory bandwidth, utilization, waves
    Figure("HBM3 on an H100: 3.35 TB/s", 3.35, lambda ns: hardware.peak_bandwidth("H100-SXM") / T),
    Figure("uses 20% of its memory bandwidth", 20, lambda ns: 100 * ns["memory_utilization"]),
    Figure("math utilization is about 0.7 or more", 0.7,
           lambda ns: inspect.signature(lab01.limiter).parameters["threshold"].default),
    Figure("run in two *waves*", 2, lambda ns: ns["lecture_waves"]),
    Figure("the first uses 100% of the GPU", 100, lambda ns: 100 * ns["wave_use"][0]),
    Figure("the second 50%", 50, lambda ns: 100 * ns["wave_use"][1]),
    # 4. Arithmetic intensity, the convolution estimate
    Figure("32 FLOPs over 17 bytes is 1.88 FLOP/B", 1.88, lambda ns: ns["example_intensity"], rtol=3e-3),
    Figure("(44,728,320 FLOPs;", 44_728_320, lambda ns: ns["flops"], rtol=0),
    Figure("(44,728,320 FLOPs;", 44_728_320,
           lambda ns: lab01.conv2d_flops((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True), rtol=0),
    Figure("2,396,160 and 3,194,880 bytes", 2_396_160, lambda ns: ns["in_bytes"], rtol=0),
    Figure("2,396,160 and 3,194,880 bytes", 3_194_880, lambda ns: ns["out_bytes"], rtol=0),
    Figure("44,728,320 / 10^12 s is **44.7 µs**", 44.7, lambda ns: ns["t_math"] * 1e6, rtol=2e-3),
    Figure("together are 5,591,040 bytes", 5_591_040, lambda ns: ns["in_bytes"] + ns["out_bytes"], rtol=0),
    Figure("**5.6 µs** at 1000 GB/s", 5.6, lambda ns: ns["t_mem"] * 1e6, rtol=0.01),
    Figure("math-bound on that device, by a factor of eight", 8, lambda ns: ns["t_math"] / ns["t_mem"], rtol=0.01),
    Figure("\"44.8 ns\"", 44.8, None, why="the lecture's slip (the right figure, 44.7 µs, is checked above)"),
    Figure("divide 559,104 bytes", 559_104, None, why="the lecture's slip (the right figure, 5,591,040, is checked above)"),
    # 5. The roofline
    Figure("ridge ~139 FLOP/B", 139, lambda ns: hardware.ridge_point("V100", "fp16"), rtol=3e-3),
    Figure("989 TFLOP/s over 3.35 TB/s is ~295 FLOP/B", 989, lambda ns: hardware.peak_flops("H100-SXM", "bf16") / T,
           rtol=1e-3),
    Figure("989 TFLOP/s over 3.35 TB/s is ~295 FLOP/B", 295, lambda ns: hardware.ridge_point("H100-SXM", "bf16"),
           rtol=3e-3),
    # 6. Energy
    Figure("an 8-bit integer multiply costs 0.2 pJ", 0.2, lambda ns: ns["energy"]["int8_multiply"]),
    Figure("DRAM costs 128 pJ", 128, lambda ns: ns["energy"]["fetch_two_int8_from_dram"]),
    Figure("from a large on-chip SRAM 2 pJ", 2, lambda ns: ns["energy"]["fetch_two_int8_from_large_sram"]),
    Figure("costs 640 times the arithmetic", 640, lambda ns: ns["dram_vs_multiply"]),
    Figure("and 64 times a fetch from on-chip memory", 64, lambda ns: ns["dram_vs_sram"]),
    # Summary
    Figure("tensor-core formats are 8-16x faster than FP32", 8,
           lambda ns: hardware.peak_flops("V100", "fp16") / hardware.peak_flops("V100", "fp32"), rtol=0.01),
    Figure("tensor-core formats are 8-16x faster than FP32", 16,
           lambda ns: hardware.peak_flops("A100", "fp16") / hardware.peak_flops("A100", "fp32"), rtol=0.01),
]
