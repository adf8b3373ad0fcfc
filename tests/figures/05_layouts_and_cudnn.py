"""Figures quoted by course/05_layouts_and_cudnn.ipynb."""
import math

import numpy as np

from gpudl.conv import ConvolutionDescriptor, FilterDescriptor, TensorDescriptor
from gpudl_instructor.references import lab05 as ref

from figures import Figure, value


MEASURED_H100 = ("measured with `gpudl bench conv` on an H100 (November 2026), before the benchmark kept records; "
                 "a CPU run cannot reproduce it (`gpudl bench conv --record` on an H100 does)")
# The lecture's problem, read as one 128-channel 128x128 image and 128 filters of 3x3 (FP32, pad 1).
LECTURE_DESCS = (TensorDescriptor("fp32", (1, 128, 128, 128)), FilterDescriptor("fp32", "NCHW", 128, 128, 3, 3),
                 ConvolutionDescriptor(pad=1))


TO_3DP = {"rtol": 0, "atol": 5e-4}         # a time the prose rounds to 3 (2) decimals
TO_2DP = {"rtol": 0, "atol": 5e-3}


def _conv(algorithm: str, key: str = "median ms") -> float:
    """The H200's recorded `gpudl bench conv` row of ``algorithm`` (course/data/bench_conv.json)."""
    return value("conv", key, "H200", algorithm=algorithm)


def _versus_cudnn(algorithm: str) -> float:
    """Its recorded time over cuDNN's FP32 time in the same run; NaN unless the record's own column agrees."""
    ratio = _conv(algorithm) / _conv("cuDNN FP32 (torch)")
    return ratio if math.isclose(ratio, _conv(algorithm, "x cuDNN FP32 (torch)"), rel_tol=1e-6) else math.nan


def _only(values):
    return values[0] if len(values) == 1 else math.nan


FIGURES = [
    # 1. The guide's N=1 C=64 H=5 W=4 NCHW example
    Figure("Channel 1 starts at 20", 20, lambda ns: ns["table"][1, 0, 0]),
    Figure("channel 32 at 640", 640, lambda ns: ns["table"][32, 0, 0]),
    Figure("channel 63 ends at 1279", 1279, lambda ns: ns["table"][63, -1, -1]),
    # 4. The algorithms
    Figure("F(2x2, 3x3): 16 multiplies per 2x2 output tile instead of 36", 16,
           lambda ns: np.array(ref.WINOGRAD_BT).shape[0] ** 2),
    Figure("F(2x2, 3x3): 16 multiplies per 2x2 output tile instead of 36", 36, lambda ns: (2 * 2) * (3 * 3)),
    Figure("two outputs of a 3-tap filter from 4 inputs with 4 multiplies", 4,
           lambda ns: np.array(ref.WINOGRAD_G).shape[0]),
    Figure("two outputs of a 3-tap filter from 4 inputs with 4 multiplies", 2,
           lambda ns: np.array(ref.WINOGRAD_AT).shape[0]),
    Figure("is exactly the table's 72 MB for 3x3 filters", 72, lambda ns: ns["gemm_workspace_mib"][3]),
    Figure("is exactly the table's 72 MB for 3x3 filters", 72,
           lambda ns: ref.workspace_size("GEMM", *LECTURE_DESCS) / 2**20),
    Figure("and 968 MB for 11x11", 968, lambda ns: ns["gemm_workspace_mib"][11]),
    Figure("is exactly the table's 72 MB for 3x3 filters", 72, lambda ns: ns["lecture_table"]["GEMM"][1]),
    # the table's 11x11 column
    Figure("With 121 taps instead of 9, the direct algorithms do 13.4x the work", 13.4,
           lambda ns: ns["flops11"] / ns["flops3"], rtol=0, atol=0.05),
    Figure("With 121 taps instead of 9, the direct algorithms do 13.4x the work", 13.4, lambda ns: 121 / 9,
           rtol=0, atol=0.05),
    Figure("(GEMM 8.47 ms, IMPLICIT_PRECOMP_GEMM 6.58 ms)", 8.47, lambda ns: ns["lecture_table_11x11"]["GEMM"][0]),
    Figure("(GEMM 8.47 ms, IMPLICIT_PRECOMP_GEMM 6.58 ms)", 6.58,
           lambda ns: ns["lecture_table_11x11"]["IMPLICIT_PRECOMP_GEMM"][0]),
    Figure("(45.3 ms for 3x3, 44.7 ms for 11x11)", 45.3, lambda ns: ns["lecture_table"]["FFT"][0]),
    Figure("(45.3 ms for 3x3, 44.7 ms for 11x11)", 44.7, lambda ns: ns["lecture_table_11x11"]["FFT"][0]),
    Figure("needs 70 MB instead of 8 GB", 70, lambda ns: ns["lecture_table_11x11"]["FFT_TILING"][1]),
    Figure("is the fastest at **5.13 ms**", 5.13, lambda ns: ns["lecture_table_11x11"][ns["fastest_11x11"]][0]),
    Figure("is the fastest at **5.13 ms**", 5.13, lambda ns: min(ms for ms, _ in ns["lecture_table_11x11"].values())),
    Figure("1.28x faster than IMPLICIT_PRECOMP_GEMM", 1.28, lambda ns: 6.58 / 5.13, rtol=3e-3),
    Figure("1.28x faster than IMPLICIT_PRECOMP_GEMM", 1.28,
           lambda ns: (ns["lecture_table_11x11"]["IMPLICIT_PRECOMP_GEMM"][0]
                       / ns["lecture_table_11x11"]["FFT_TILING"][0]), rtol=3e-3),
    Figure("and 1.65x faster than GEMM", 1.65, lambda ns: 8.47 / 5.13, rtol=3e-3),
    Figure("and 1.65x faster than GEMM", 1.65,
           lambda ns: ns["lecture_table_11x11"]["GEMM"][0] / ns["lecture_table_11x11"]["FFT_TILING"][0], rtol=3e-3),
    # 5. Find
    Figure("the fastest (WINOGRAD) needs 1.56 MB", 1.56, lambda ns: ns["lecture_table"]["WINOGRAD"][1]),
    Figure("the fastest (WINOGRAD) needs 1.56 MB", 1.56,
           lambda ns: min(ns["lecture_table"].values())[1]),                      # fastest = smallest time
    Figure("memory-hungry (FFT, 8 GB) is the slowest", 8, lambda ns: ns["lecture_table"]["FFT"][1] / 1e3, rtol=0.05),
    Figure("memory-hungry (FFT, 8 GB) is the slowest", 8, lambda ns: max(ns["lecture_table"].values())[1] / 1e3,
           rtol=0.05),
    # 5. Find on the lecture's case: the H200's figures from its record (course/data/bench_conv.json, which cell 25
    # reads; the record's own rows are checked here too), the H100's from an earlier run typed into cell 25
    Figure("on an H200 (0.261, 0.315, 0.570 and 5.27 ms)", 0.261, lambda ns: _conv("WINOGRAD"), **TO_3DP),
    Figure("on an H200 (0.261, 0.315, 0.570 and 5.27 ms)", 0.315, lambda ns: _conv("IMPLICIT_GEMM"), **TO_3DP),
    Figure("on an H200 (0.261, 0.315, 0.570 and 5.27 ms)", 0.570, lambda ns: _conv("GEMM"), **TO_3DP),
    Figure("on an H200 (0.261, 0.315, 0.570 and 5.27 ms)", 5.27, lambda ns: _conv("FFT"), **TO_2DP),
    Figure("on an H200 (0.261, 0.315, 0.570 and 5.27 ms)", 0.261,
           lambda ns: ns["measured"]["H200"]["WINOGRAD"][0], **TO_3DP),
    Figure("on an H200 (0.261, 0.315, 0.570 and 5.27 ms)", 5.27,
           lambda ns: ns["measured"]["H200"]["FFT"][0], **TO_2DP),
    Figure("on an H100 (0.196, 0.314, 0.419 and", 0.196, lambda ns: ns["measured"]["H100"]["WINOGRAD"][0]),
    Figure("on an H100 (0.196, 0.314, 0.419 and", 0.314, lambda ns: ns["measured"]["H100"]["IMPLICIT_GEMM"][0]),
    Figure("on an H100 (0.196, 0.314, 0.419 and", 0.419, lambda ns: ns["measured"]["H100"]["GEMM"][0]),
    Figure("0.419 and 5.95 ms", 5.95, lambda ns: ns["measured"]["H100"]["FFT"][0]),
    Figure("it takes 2.4x cuDNN's FP32 time in the H200's record", 2.4, lambda ns: _versus_cudnn("IMPLICIT_GEMM"),
           rtol=0.02),
    Figure("four passes through a workspace of 65 MiB", 65,
           lambda ns: ref.workspace_size("WINOGRAD", *LECTURE_DESCS) / 2**20, rtol=0.01),
    Figure("four passes through a workspace of 65 MiB", 65, lambda ns: ns["measured"]["H200"]["WINOGRAD"][1], rtol=0.01),
    Figure("which keeps the tiles on chip in 1.56 MB", 1.56, lambda ns: ns["lecture_table"]["WINOGRAD"][1]),
    Figure("(WINOGRAD_NONFUSED) took about 10x as long", 10,
           lambda ns: ns["lecture_table"]["WINOGRAD_NONFUSED"][0] / ns["lecture_table"]["WINOGRAD"][0], rtol=0.06),
    Figure("in the record it takes 2.0x the time of cuDNN's best FP32 kernel", 2.0,
           lambda ns: _versus_cudnn("WINOGRAD"), rtol=0.01),
    Figure("in the record it takes 2.0x the time of cuDNN's best FP32 kernel", 2.0,
           lambda ns: ns["measured"]["H200"]["WINOGRAD"][0] / ns["cudnn_fp32_ms"], rtol=0.01),
    Figure("FFT is last by about 9x (against GEMM) in the record", 9, lambda ns: _conv("FFT") / _conv("GEMM"),
           rtol=0.05),
    Figure("against 60x in the table", 60,
           lambda ns: ns["lecture_table"]["FFT"][0] / ns["lecture_table"]["GEMM"][0], rtol=0.01),
    Figure("its spectra take 1089 MiB", 1089, lambda ns: ref.workspace_size("FFT", *LECTURE_DESCS) / 2**20, rtol=0.001),
    Figure("its spectra take 1089 MiB", 1089, lambda ns: ns["measured"]["H100"]["FFT"][1], rtol=0.001),
    Figure("cuDNN's FFT 8322 MB", 8322, lambda ns: ns["lecture_table"]["FFT"][1]),
    # 6. The NHWC CNN
    # the lecture's flatten is the row-major order of the pooled tensor stored NCHW (the lab's last question)
    Figure("`[9 9 9 9 7 1 6 0]`", 7, lambda ns: ns["qc"].permute(0, 3, 1, 2).reshape(-1)[4].item()),
    Figure("`[9 9 9 9 7 1 6 0]`", 6, lambda ns: ns["qc"].permute(0, 3, 1, 2).reshape(-1)[6].item()),
    Figure("`[9 9 9 9 7 1 6 0]`", 7, lambda ns: ns["qd"][0, 4].item()),
    Figure("a softmax of `2.389e-01` four times", 0.2389, lambda ns: ns["out"][:4].min().item(), rtol=2e-4),
    Figure("a softmax of `2.389e-01` four times", 0.2389, lambda ns: ns["out"][:4].max().item(), rtol=2e-4),
    Figure("then `3.23e-02`", 0.0323, lambda ns: ns["out"][4].item(), rtol=2e-3),
    Figure("`8.01e-05`", 8.01e-05, lambda ns: ns["out"][5].item(), rtol=2e-3),
    Figure("`1.19e-02`", 0.0119, lambda ns: ns["out"][6].item(), rtol=2e-3),
    Figure("`2.95e-05`", 2.95e-05, lambda ns: ns["out"][7].item(), rtol=2e-3),
    Figure("7 - 3 + 1 = 5 x 5 at stride 1", 5, lambda ns: ns["cnn_out_side"][1]),
    Figure("(7 - 3) / 2 + 1 = **3 x 3** at stride 2", 3, lambda ns: ns["cnn_out_side"][2]),
    Figure("(7 - 3) / 2 + 1 = **3 x 3** at stride 2", 3, lambda ns: ns["qa_ours"].shape[2]),   # conv at stride 2: P
    Figure("(7 - 3) / 2 + 1 = **3 x 3** at stride 2", 3, lambda ns: ns["qa"].shape[1]),
    Figure("so the example uses **stride 2**", 2,
           lambda ns: _only([st for st in (1, 2, 3) if (7 - 3) // st + 1 == ns["qa"].shape[1]])),
    Figure("the softmax it prints has **8** entries", 8, lambda ns: ns["out"].numel()),
    Figure("the convolution, with **56** parameters", 56, lambda ns: ns["cnn_conv_params"]),
    Figure("a hidden dense layer of **8** neurons is the only width", 8, lambda ns: _only(ns["hidden_for_146"])),
    Figure("brings the count to 146 (56 + 72 + 18)", 146, lambda ns: sum(ns["cnn_parameters"](8))),
    Figure("brings the count to 146 (56 + 72 + 18)", 72, lambda ns: ns["cnn_parameters"](8)[1]),
    Figure("brings the count to 146 (56 + 72 + 18)", 18, lambda ns: ns["cnn_parameters"](8)[2]),
    Figure("outputs also gives 146 (56 + 90)", 90, lambda ns: 8 * 10 + 10),
    Figure("outputs also gives 146 (56 + 90)", 146, lambda ns: ns["cnn_conv_params"] + 8 * 10 + 10),
    Figure("a single dense layer from the 8 features to **10**", 10, lambda ns: _only(ns["single_dense_146"])),
    Figure("\"The total number of the trainable parameters is 146\"", 146, None,
           why="the lecture's figure, quoted; the network it belongs to is counted in the figures above"),
]
