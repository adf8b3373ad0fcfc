"""The figures course/09_profiling_and_inference.ipynb quotes, and where each comes from."""
from __future__ import annotations

from figures import Figure, rung

from gpudl import conv, hardware, profiling
from gpudl_instructor.references.lab01 import batch_latency


def _share(what: str) -> float:
    return next(r["time_pct"] for r in profiling.lecture_rows() if r["what"] == what)


def _int8(n: int, what: str, key: str, gpu: str = "H100-SXM") -> float:
    """A row of the INT8 GEMMs `gpudl bench inference --record` kept for ``gpu`` (course/data)."""
    from gpudl.benchmarks import inference

    rows = inference.recorded_int8()[gpu]["rows"]
    names = {"fp16": "torch.matmul FP16 (cuBLAS)", "row": "torch._int_mm, B row-major",
             "col": "torch._int_mm, B column-major", "triton": "Triton INT8 (int8_matmul_triton)",
             "layer": inference.LAYER_ROW}
    return next(r[key] for r in rows if r["n"] == n and r["what"] == names[what])


def _fastest(n: int, gpu: str = "H100-SXM") -> float:
    """The largest speed-up over FP16 among ``gpu``'s INT8 rows at n^3."""
    return max(_int8(n, w, "speed-up", gpu) for w in ("fp16", "row", "col", "triton", "layer"))


def _fusion(what: str, key: str, gpu: str = "H100-SXM") -> float:
    """A fusion row `gpudl bench inference --record` kept for ``gpu`` (course/data)."""
    from gpudl import benchmarks

    rows = benchmarks.recorded_table("inference", gpu, keep=lambda r: r["part"] == "fusion").rows
    return next(r[key] for r in rows if r["what"] == what)


def _fusion_bandwidth(what: str, gpu: str = "H100-SXM") -> float:
    """The model's bytes of that version of the 8192 x 8192 FP16 chain over its recorded time on ``gpu``, in B/s."""
    from gpudl import fusion

    ops = fusion.chain_ops(8192, 8192, "fp16") if what.startswith("eager") else [fusion.fused_op(8192, 8192, "fp16")]
    return sum(op.bytes for op in ops) / (_fusion(what, "median ms", gpu) * 1e-3)


def _of_bandwidth(what: str, gpu: str = "H100-SXM") -> float:
    """That version's bandwidth on ``gpu`` in % of the GPU's peak bandwidth."""
    return 100 * _fusion_bandwidth(what, gpu) / hardware.peak_bandwidth(gpu)


def _fused_over_eager(gpu: str = "H100-SXM") -> float:
    """The fused kernel's bandwidth on ``gpu`` over the eager chain's: the measured speed-up over the predicted one."""
    return _fusion_bandwidth("fused Triton kernel", gpu) / _fusion_bandwidth("eager torch (3 kernels)", gpu)


def _of_peak(n: int, what: str, gpu: str = "H100-SXM") -> float:
    dtype = "fp16" if what == "fp16" else "int8"
    return _int8(n, what, "TOP/s", gpu) * 1e12 / hardware.peak_flops(gpu, dtype) * 100


def _per_iteration(what: str) -> int:
    return next(r["per_iteration"] for r in profiling.lecture_rows() if r["what"] == what)



# the metrics of the lecture's ncu line (--metrics ...), in its order
_LECTURE_NCU_METRICS = ("sm__cycles_elapsed.sum", "sm__cycles_active.sum",
                        "dram__bytes_read.sum", "dram__bytes_write.sum")



def _host_bound_margin() -> float:
    import inspect

    from gpudl.benchmarks import inference
    return (inspect.signature(inference.host_bound).parameters["margin"].default - 1) * 100


GLUON = ("`scripts/gluon_probe.py --sizes 2048 4096 8192 --rounds 3` (two calls) and `--sizes 2048 --rounds 2` (two "
         "more) on the H200 (2026-11-28, the fifth session of the day); a probe, not a record (median of the rounds "
         "against FP16, L2 flushed): ")

def _flush_bytes(gpu: str) -> int:
    """The bytes ``gpudl.timing.time_cuda`` zeroes to flush L2 on ``gpu``: twice its L2, at least 256 MiB."""
    from gpudl import timing

    return timing.flush_bytes(hardware.get_spec(gpu).l2_kib * 1024)


FIGURES = [
    # what the lecture takes up: three of TensorRT's steps, and the three it leaves
    Figure("takes three of TensorRT's steps one by one", 3, None,
           why="the steps the sentence names: fusion, INT8 quantization and kernel auto-tuning (batching, named "
               "after them, is not one of TensorRT's features)"),
    Figure("Three of TensorRT's six features have been built here", 3, None,
           why="the section's list: precision calibration, layer and tensor fusion, kernel auto-tuning"),
    Figure("Three of TensorRT's six features have been built here", 6, None,
           why="the three built and the three the section names next: dynamic tensor memory, multi-stream "
               "execution, time fusion"),
    # the tools: the lecture's ncu line, its NVTX timeline and its DLProf tables (numbers as the deck prints them)
    Figure("four counters per kernel", 4, lambda ns: len(_LECTURE_NCU_METRICS)),
    Figure("keeps the two DRAM counters", 2, lambda ns: len(profiling.NCU_BYTES)),
    Figure("keeps the two DRAM counters", 2,
           lambda ns: len(set(profiling.NCU_BYTES) & set(_LECTURE_NCU_METRICS))),
    Figure("Forward and backward cover 4.768 of batch 300's 4.981 ms", 4.768, lambda ns: 1.939 + 2.829, rtol=1e-4),
    Figure("Forward and backward cover 4.768 of batch 300's 4.981 ms", 4.768,
           lambda ns: sum(ns["nvtx_batches"][300][1:]), rtol=1e-4),
    Figure("the other 0.213 ms (4%)", 0.213, lambda ns: ns["nvtx_outside_ms"][300], rtol=1e-3),
    Figure("the other 0.213 ms (4%)", 4, lambda ns: 100 * 0.213 / 4.981, rtol=0.1),
    Figure("and 0.328 ms (7%) of batch 301's", 0.328, lambda ns: ns["nvtx_outside_ms"][301], rtol=1e-3),
    Figure("and 0.328 ms (7%) of batch 301's", 0.328, lambda ns: 4.645 - 1.845 - 2.472, rtol=1e-3),
    Figure("and 0.328 ms (7%) of batch 301's", 7, lambda ns: 100 * 0.328 / 4.645, rtol=0.02),
    Figure("The backward pass takes 1.46x and 1.34x the forward", 1.46, lambda ns: 2.829 / 1.939, rtol=3e-3),
    Figure("The backward pass takes 1.46x and 1.34x the forward", 1.34, lambda ns: 2.472 / 1.845, rtol=3e-3),
    Figure("Training is 87.5% of the epoch", 87.5, lambda ns: 100 * ns["train_share"], rtol=1e-3),
    Figure("Training is 87.5% of the epoch", 87.5, lambda ns: 100 * 6.692 / 7.649, rtol=1e-3),
    Figure("the remaining 0.957 s lie outside `Train`", 0.957, lambda ns: 7.649 - 6.692, rtol=1e-3),
    Figure("`Train` held about 1,390 batches", 1390, lambda ns: ns["batches_in_train"], rtol=2e-3),
    Figure("`Train` held about 1,390 batches", 1390, lambda ns: 6692 / ((4.981 + 4.645) / 2), rtol=2e-3),
    Figure("97 of 111 nodes, 87.387%", 87.387, lambda ns: 100 * 97 / 111, rtol=1e-5),
    Figure("97 of 111 nodes, 87.387%", 97, lambda ns: ns["dlprof_tc_nodes"]["tower_0/v"]),
    Figure("83.784% of 37 nodes is 31", 31, lambda ns: ns["dlprof_tc_nodes"]["tower_0/v/cg"]),
    Figure("83.784% of 37 nodes is 31", 83.784, lambda ns: 100 * 31 / 37, rtol=1e-5),
    Figure("(`input_processing`, 6,179,353) takes 2.4x the time of the model", 2.4,
           lambda ns: ns["dlprof_input_vs_model"], rtol=0.01),
    Figure("(`input_processing`, 6,179,353) takes 2.4x the time of the model", 2.4, lambda ns: 6_179_353 / 2_585_470,
           rtol=0.01),
    Figure("takes 88% of the forward pass's time (2,097,182)", 88, lambda ns: 100 * ns["dlprof_first_conv_share"],
           rtol=5e-3),
    Figure("takes 88% of the forward pass's time (2,097,182)", 88, lambda ns: 100 * 1_850_516 / 2_097_182, rtol=5e-3),
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
    # "convolution is 80-90% of execution time" against the ResNet-50 profile
    Figure("in `layer1` the ten convolutions take 30.7% of the kernel time", 30.7,
           lambda ns: 100 * ns["layer1_conv_share"], rtol=2e-3),
    Figure("in `layer1` the ten convolutions take 30.7% of the kernel time", 30.7,
           lambda ns: 100 * (573_215 + 303_231) / (817_501 + 573_215 + 527_775 + 523_325 + 303_231 + 107_456),
           rtol=2e-3),
    Figure("(0.876 of 2.853 ms)", 0.876, lambda ns: ns["layer1_conv_ns"] / 1e6, rtol=1e-3),
    Figure("(0.876 of 2.853 ms)", 2.853, lambda ns: ns["layer1_total"] / 1e6, rtol=1e-3),
    Figure("the one convolution kernel among the top five takes 15.9%", 15.9,
           lambda ns: _share("GEMM (CUTLASS, TF32 tensor cores)")),
    Figure("outside the top five (26.8% of the time)", 26.8, lambda ns: 100 - 22 - 15.9 - 12.6 - 11.5 - 11.2,
           rtol=1e-3),
    Figure("outside the top five (26.8% of the time)", 26.8, lambda ns: 100 - ns["top5"], rtol=1e-3),
    Figure("convolutions would take at most 42.7%", 42.7, lambda ns: ns["conv_share_at_most"], rtol=1e-3),
    Figure("convolutions would take at most 42.7%", 42.7, lambda ns: 15.9 + 100 - 73.2, rtol=1e-3),
    Figure("the convolution takes \"80-90% of execution", 80, None,
           why="the cuDNN lecture's claim, quoted to be set against the profile's figures above"),
    Figure("more than 10x slower", 10, None,
           why="the lecture's statement of Nsight Compute's overhead ('can take over 10x longer to execute')"),
    # fusion
    Figure("about 2.3x", 2.3, lambda ns: ns["predicted"], rtol=0.02),
    Figure("to about 1.7 FLOP/byte", 1.7, lambda ns: ns["fused"].intensity, rtol=0.03),
    Figure("it removes bytes, four of every seven", 4,
           lambda ns: 7 * (1 - ns["fused"].bytes / sum(o.bytes for o in ns["ops"])), rtol=1e-3),
    # INT8
    Figure("step of about 0.8", 0.8, lambda ns: ns["steps"]["max"], rtol=0.06),
    Figure("about twenty times finer", 20, lambda ns: ns["steps"]["max"] / ns["steps"]["percentile"], rtol=0.05),
    Figure("$127^2 = 16129$", 16129, lambda ns: 127 ** 2),
    Figure("about 133,000 worst-case terms", 133_000, lambda ns: ns["products_to_overflow"], rtol=0.01),
    Figure("INT8's peak is 2x FP16's on an H100", 2,
           lambda ns: hardware.peak_flops("H100-SXM", "int8") / hardware.peak_flops("H100-SXM", "fp16")),
    Figure("inference latency of 7 ms with TensorRT", 7, None,
           why="the cuDNN lecture's Volta slide ('ResNet-50 Inference: TensorRT - 7ms Latency'), quoted as the deck "
               "gives it"),
    # INT8 GEMMs measured on an H100 (course/data/bench_inference.json, the record's H100 entry)
    Figure("cuBLAS FP16 ran at 724 TFLOP/s", 724, lambda ns: _int8(8192, "fp16", "TOP/s"), atol=0.6, rtol=0),
    Figure("724 TFLOP/s, 73% of its peak", 73, lambda ns: _of_peak(8192, "fp16"), atol=0.5, rtol=0),
    Figure("row-major ran at 130 TOP/s", 130, lambda ns: _int8(8192, "row", "TOP/s"), atol=0.5, rtol=0),
    Figure("0.18x FP16 and 7% of INT8's peak", 0.18, lambda ns: _int8(8192, "row", "speed-up"), atol=0.005, rtol=0),
    Figure("0.18x FP16 and 7% of INT8's peak", 7, lambda ns: _of_peak(8192, "row"), atol=0.5, rtol=0),
    Figure("column-major ran at 900 TOP/s", 900, lambda ns: _int8(8192, "col", "TOP/s"), atol=0.5, rtol=0),
    Figure("900 TOP/s, 1.25x FP16", 1.25, lambda ns: _int8(8192, "col", "speed-up"), atol=0.005, rtol=0),
    Figure("Triton kernel at 1,163 TOP/s", 1163, lambda ns: _int8(8192, "triton", "TOP/s"), atol=0.5, rtol=0),
    Figure("1,163 TOP/s, 1.61x FP16", 1.61, lambda ns: _int8(8192, "triton", "speed-up"), atol=0.005, rtol=0),
    Figure("(1.68x with the", 1.68, lambda ns: _int8(8192, "layer", "speed-up"), atol=0.005, rtol=0),
    Figure("reach 45.5% of INT8's peak", 45.5, lambda ns: _of_peak(8192, "col"), atol=0.05, rtol=0),
    Figure("FP16 kernels reach 73% of theirs", 73, lambda ns: _of_peak(8192, "fp16"), atol=0.5, rtol=0),
    Figure("twice the peak bought 1.25x", 1.25, lambda ns: _int8(8192, "col", "speed-up"), atol=0.005, rtol=0),
    Figure("a sweep of 51 configurations", 51, None,
           why="scripts/int8_tune.py's sweep on an H100 (2026-11-27): 32 configurations at 2048^3 and 8192^3, 19 more "
               "at 2048^3; its output is not kept with the lecture"),
    Figure("the margin shrinks to 1.21x", 1.21, lambda ns: _int8(2048, "triton", "speed-up"), atol=0.005, rtol=0),
    Figure("The whole product takes 23 us", 23, lambda ns: _int8(2048, "triton", "median ms") * 1e3, atol=0.5, rtol=0),
    Figure("the INT32 result (16 MiB", 16, lambda ns: 2048 ** 2 * 4 / 2 ** 20),
    Figure("twice the 8 MiB of FP16's", 8, lambda ns: 2048 ** 2 * 2 / 2 ** 20),
    Figure("the layer's form ran at 0.63x FP16", 0.63, lambda ns: _int8(2048, "layer", "speed-up"), atol=0.005, rtol=0),
    Figure("fastest row at 4096^3 (1.53x)", 1.53, lambda ns: _int8(4096, "layer", "speed-up"), atol=0.005, rtol=0),
    Figure("fastest row at 4096^3 (1.53x)", 1.53, lambda ns: _fastest(4096), atol=0.005, rtol=0),
    # INT8 GEMMs on the H200 (the record's H200 entry)
    Figure("At 8192^3 cuBLAS FP16 ran at\n716 TFLOP/s, 72% of its peak", 716,
           lambda ns: _int8(8192, "fp16", "TOP/s", "H200"), atol=0.6, rtol=0),
    Figure("At 8192^3 cuBLAS FP16 ran at\n716 TFLOP/s, 72% of its peak", 72, lambda ns: _of_peak(8192, "fp16", "H200"),
           atol=0.5, rtol=0),
    Figure("ran at 0.16x to 0.19x FP16 at every size", 0.16,
           lambda ns: min(_int8(n, "row", "speed-up", "H200") for n in (2048, 4096, 8192)), atol=0.005, rtol=0),
    Figure("ran at 0.16x to 0.19x FP16 at every size", 0.19,
           lambda ns: max(_int8(n, "row", "speed-up", "H200") for n in (2048, 4096, 8192)), atol=0.005, rtol=0),
    Figure("with B column-major at 0.89x, 1.14x and 1.28x from 2048^3 to 8192^3", 0.89,
           lambda ns: _int8(2048, "col", "speed-up", "H200"), atol=0.005, rtol=0),
    Figure("with B column-major at 0.89x, 1.14x and 1.28x from 2048^3 to 8192^3", 1.14,
           lambda ns: _int8(4096, "col", "speed-up", "H200"), atol=0.005, rtol=0),
    Figure("with B column-major at 0.89x, 1.14x and 1.28x from 2048^3 to 8192^3", 1.28,
           lambda ns: _int8(8192, "col", "speed-up", "H200"), atol=0.005, rtol=0),
    Figure("the Triton kernel at 8192^3 at\n1,176 TOP/s, 1.64x FP16", 1176,
           lambda ns: _int8(8192, "triton", "TOP/s", "H200"), atol=0.5, rtol=0),
    Figure("the Triton kernel at 8192^3 at\n1,176 TOP/s, 1.64x FP16", 1.64,
           lambda ns: _int8(8192, "triton", "speed-up", "H200"), atol=0.005, rtol=0),
    Figure("(1.67x with the layer's epilogue)", 1.67, lambda ns: _int8(8192, "layer", "speed-up", "H200"), atol=0.005,
           rtol=0),
    Figure("(on the H200, 45.5%\nand 72%: 1.28x)", 45.5, lambda ns: _of_peak(8192, "col", "H200"), atol=0.05, rtol=0),
    Figure("(on the H200, 45.5%\nand 72%: 1.28x)", 72, lambda ns: _of_peak(8192, "fp16", "H200"), atol=0.5, rtol=0),
    Figure("(on the H200, 45.5%\nand 72%: 1.28x)", 1.28, lambda ns: _int8(8192, "col", "speed-up", "H200"),
           atol=0.005, rtol=0),
    Figure("shrinks to 1.21x (1.27x on the H200)", 1.27, lambda ns: _int8(2048, "triton", "speed-up", "H200"),
           atol=0.005, rtol=0),
    Figure("(22 us on the H200)", 22, lambda ns: _int8(2048, "triton", "median ms", "H200") * 1e3, atol=0.5, rtol=0),
    Figure("(1.40x at 2048^3, 1.65x at 4096^3)", 1.40, lambda ns: _int8(2048, "layer", "speed-up", "H200"), atol=0.005,
           rtol=0),
    Figure("(1.40x at 2048^3, 1.65x at 4096^3)", 1.40, lambda ns: _fastest(2048, "H200"), atol=0.005, rtol=0),
    Figure("(1.40x at 2048^3, 1.65x at 4096^3)", 1.65, lambda ns: _int8(4096, "layer", "speed-up", "H200"), atol=0.005,
           rtol=0),
    Figure("(1.40x at 2048^3, 1.65x at 4096^3)", 1.65, lambda ns: _fastest(4096, "H200"), atol=0.005, rtol=0),
    Figure("runs for about 20 us", 20, lambda ns: _int8(2048, "triton", "graph ms", "H200") * 1e3, atol=2.5, rtol=0),
    Figure("by zeroing 256 MiB, at least 56 us at the H200's 4.8 TB/s", 256, lambda ns: _flush_bytes("H200") / 2**20),
    Figure("by zeroing 256 MiB, at least 56 us at the H200's 4.8 TB/s", 56,
           lambda ns: _flush_bytes("H200") / hardware.peak_bandwidth("H200") * 1e6, atol=0.5, rtol=0),
    Figure("by zeroing 256 MiB, at least 56 us at the H200's 4.8 TB/s", 4.8,
           lambda ns: hardware.peak_bandwidth("H200") / 1e12),
    Figure("(1.28x for the Triton kernel, 1.36x for the layer's\nform at 2048^3)", 1.28,
           lambda ns: _int8(2048, "triton", "graph speed-up", "H200"), atol=0.005, rtol=0),
    Figure("(1.28x for the Triton kernel, 1.36x for the layer's\nform at 2048^3)", 1.36,
           lambda ns: _int8(2048, "layer", "graph speed-up", "H200"), atol=0.005, rtol=0),
    Figure("more than 15% above its replay", 15, lambda ns: _host_bound_margin(), atol=1e-9, rtol=0),
    Figure("four steps of the k-loop ahead", 4, None,
           why=GLUON + "the fastest variants keep four buffers (three cost 20% at 2048^3)"),
    Figure("same FP16 product slower on the same GPUs (677 and 651 TFLOP/s)", 677, lambda ns: rung("fp16"),
           atol=0.5, rtol=0),
    Figure("same FP16 product slower on the same GPUs (677 and 651 TFLOP/s)", 651, lambda ns: rung("fp16", gpu="H200"),
           atol=0.5, rtol=0),
    # the fused chain measured on an H100 (the same record)
    Figure("the eager chain took 0.403 ms", 0.403, lambda ns: _fusion("eager torch (3 kernels)", "median ms"),
           atol=5e-4, rtol=0),
    Figure("at 2,329 GB/s, 70% of", 2329, lambda ns: _fusion_bandwidth("eager torch (3 kernels)") / 1e9, atol=0.5,
           rtol=0),
    Figure("at 2,329 GB/s, 70% of", 70, lambda ns: _of_bandwidth("eager torch (3 kernels)"), atol=0.5, rtol=0),
    Figure("the fused Triton kernel took 0.137 ms", 0.137, lambda ns: _fusion("fused Triton kernel", "median ms"),
           atol=5e-4, rtol=0),
    Figure("at 2,930 GB/s, 87%", 2930, lambda ns: _fusion_bandwidth("fused Triton kernel") / 1e9, atol=0.5, rtol=0),
    Figure("at 2,930 GB/s, 87%", 87, lambda ns: _of_bandwidth("fused Triton kernel"), atol=0.5, rtol=0),
    Figure("2.94x faster, where the bytes", 2.94, lambda ns: _fusion("fused Triton kernel", "speed-up"), atol=0.005,
           rtol=0),
    Figure("predicted 2.33x", 2.33, lambda ns: _fusion("fused Triton kernel", "predicted"), atol=0.005, rtol=0),
    Figure("predicted 2.33x", 2.33, lambda ns: ns["predicted"], atol=0.005, rtol=0),
    Figure("here 1.26", 1.26, lambda ns: _fusion("fused Triton kernel", "measured/predicted"), atol=0.005, rtol=0),
    Figure("here 1.26", 1.26, lambda ns: _fused_over_eager(), atol=0.005, rtol=0),
    Figure("that ran as fast (2.95x)", 2.95, lambda ns: _fusion("torch.compile", "speed-up"), atol=0.005, rtol=0),
    # the fused chain on the H200 (the record's H200 entry)
    Figure("The H200's peak bandwidth is 4.8 TB/s, against the H100's 3.35", 4.8,
           lambda ns: hardware.peak_bandwidth("H200") / 1e12),
    Figure("The H200's peak bandwidth is 4.8 TB/s, against the H100's 3.35", 3.35,
           lambda ns: hardware.peak_bandwidth("H100-SXM") / 1e12),
    Figure("the eager chain took 0.341 ms at\n2,751 GB/s (57% of that peak)", 0.341,
           lambda ns: _fusion("eager torch (3 kernels)", "median ms", "H200"), atol=5e-4, rtol=0),
    Figure("the eager chain took 0.341 ms at\n2,751 GB/s (57% of that peak)", 2751,
           lambda ns: _fusion_bandwidth("eager torch (3 kernels)", "H200") / 1e9, atol=0.5, rtol=0),
    Figure("the eager chain took 0.341 ms at\n2,751 GB/s (57% of that peak)", 57,
           lambda ns: _of_bandwidth("eager torch (3 kernels)", "H200"), atol=0.5, rtol=0),
    Figure("the fused kernel 0.117 ms at 3,434 GB/s (72%)", 0.117,
           lambda ns: _fusion("fused Triton kernel", "median ms", "H200"), atol=5e-4, rtol=0),
    Figure("the fused kernel 0.117 ms at 3,434 GB/s (72%)", 3434,
           lambda ns: _fusion_bandwidth("fused Triton kernel", "H200") / 1e9, atol=0.5, rtol=0),
    Figure("the fused kernel 0.117 ms at 3,434 GB/s (72%)", 72,
           lambda ns: _of_bandwidth("fused Triton kernel", "H200"), atol=0.5, rtol=0),
    Figure("2.91x faster, against the\nsame predicted 2.33x", 2.91,
           lambda ns: _fusion("fused Triton kernel", "speed-up", "H200"), atol=0.005, rtol=0),
    Figure("2.91x faster, against the\nsame predicted 2.33x", 2.33,
           lambda ns: _fusion("fused Triton kernel", "predicted", "H200"), atol=0.005, rtol=0),
    Figure("again 1.25 times the eager chain's", 1.25,
           lambda ns: _fusion("fused Triton kernel", "measured/predicted", "H200"), atol=0.005, rtol=0),
    Figure("again 1.25 times the eager chain's", 1.25, lambda ns: _fused_over_eager("H200"), atol=0.005, rtol=0),
    Figure("kernel about as fast (2.93x)", 2.93, lambda ns: _fusion("torch.compile", "speed-up", "H200"), atol=0.005, rtol=0),
    Figure("multiplying row 7 of the first layer by 256", 256, lambda ns: ns["FACTOR"]),
    # tuning and batching
    Figure("from 0.26 ms for Winograd", 0.26, lambda ns: conv.LECTURE_GV100_3X3["WINOGRAD"][0]),
    Figure("to 45 ms for FFT", 45, lambda ns: conv.LECTURE_GV100_3X3["FFT"][0], rtol=0.01),
    Figure("a frame is out 33 ms after it arrives", 33, lambda ns: batch_latency(30, 1) * 1e3, rtol=0.02),
    Figure("at 2 frames per batch 67 ms", 67, lambda ns: batch_latency(30, 2) * 1e3, rtol=0.01),
]
