"""Figures quoted by course/03_gemm_blocking.ipynb."""
import inspect

from gpudl import gemm, hardware

from figures import Figure

V100_TENSOR_CORES_PER_SM = 8          # the lecture's "1 SM has 8 TC"

FIGURES = [
    Figure("`q = 2 n^3 / m ~ 2`", 2, lambda ns: 2 * 4096**3 / gemm.naive_traffic(4096), rtol=0.01),
    Figure("are worst, by about 22x", 22, lambda ns: ns["words"]["jki"] / ns["words"]["ikj"], rtol=0.03),
    Figure("are worst, by about 22x", 22, lambda ns: ns["words"]["kji"] / ns["words"]["ikj"], rtol=0.03),
    Figure("it needs about **1.5x** the room of the three tiles", 1.5,
           lambda ns: inspect.signature(gemm.lru_capacity_for_block).parameters["slack"].default),
    Figure("the simulation moves about 2.5x the model", 2.5,
           lambda ns: gemm.traffic_table(64, [2], line_words=4)[0]["simulated/model"], rtol=0.03),
    Figure("on Volta, a 4 x 4 x 4 product per clock per tensor core", 4,
           lambda ns: (hardware.SPECS["V100"].tensor_fma_per_sm["fp16"] / V100_TENSOR_CORES_PER_SM) ** (1 / 3),
           rtol=1e-9),
    Figure("give the 512 FMA per clock per SM", 512, lambda ns: hardware.SPECS["V100"].tensor_fma_per_sm["fp16"]),
    Figure("behind its 125 TFLOP/s", 125, lambda ns: hardware.peak_flops("V100", "fp16") / 1e12, rtol=5e-3),
]
