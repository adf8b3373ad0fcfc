"""Batched GEMM (a loop of small calls vs one call); on a GPU, the tuned Triton GEMM vs cuBLAS.

CPU: a loop of small GEMMs against one batched call. GPU: the same with torch; ``matmul_triton``
(autotuned, persistent kernels) against cuBLAS at 1024^3 and 4096^3 in FP16 and BF16, and a
table (and figure) of the pointer kernel's TFLOP/s for several tile sizes. (The blocked GEMM
and the traffic model are lab 03's exercises: the instructor's benchmark measures those.)
"""
from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from .. import hardware, timing
from ..gemm import gemm_batched, gemm_batched_loop, triton_block_sweep, triton_vs_torch
from ..table import Table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per row")
    p.add_argument("--gpu-only", action="store_true", help="only the GPU rows (Triton vs cuBLAS, tile sweep)")


def run(args: argparse.Namespace) -> Table:
    budget = args.budget or (1.0 if args.quick else 4.0)
    cuda = hardware.device() == "cuda"
    table = Table("GEMM: batched GEMM" + (", Triton vs cuBLAS" if cuda else ""))

    batch, s = (2048, 8) if args.quick else (8192, 8)        # the batched GEMMs
    if not args.gpu_only:
        # 1. Batched small GEMMs: a loop of calls vs one call.
        g = np.random.default_rng(0)
        Ab, Bb = g.standard_normal((batch, s, s)), g.standard_normal((batch, s, s))
        loop = timing.time_cpu(lambda: gemm_batched_loop(Ab, Bb), budget_s=budget / 4, what="loop")
        one = timing.time_cpu(lambda: gemm_batched(Ab, Bb), budget_s=budget / 4, what="one call")
        table.rows.append({"section": "batched cpu", "case": f"{batch} GEMMs {s}x{s}x{s}: loop of np.matmul",
                           "value": loop.median * 1e3, "unit": "ms", "time / np.matmul": loop.median / one.median})
        table.rows.append({"section": "batched cpu", "case": f"{batch} GEMMs {s}x{s}x{s}: one np.matmul",
                           "value": one.median * 1e3, "unit": "ms", "time / np.matmul": 1.0})

    if cuda:
        import torch

        At = torch.randn(batch, s, s, device="cuda", dtype=torch.float16)
        Bt = torch.randn(batch, s, s, device="cuda", dtype=torch.float16)
        loop = timing.time_cuda(lambda: gemm_batched_loop(At, Bt), budget_s=budget / 4, flush_l2=False)
        one = timing.time_cuda(lambda: gemm_batched(At, Bt), budget_s=budget / 4, flush_l2=False)
        table.rows.append({"section": "batched gpu", "case": f"{batch} GEMMs {s}^3 fp16: loop of torch.matmul",
                           "value": loop.median * 1e3, "unit": "ms", "time / torch.bmm": loop.median / one.median})
        table.rows.append({"section": "batched gpu", "case": f"{batch} GEMMs {s}^3 fp16: one torch.bmm",
                           "value": one.median * 1e3, "unit": "ms", "time / torch.bmm": 1.0})
        # 2. The tuned Triton GEMM against cuBLAS.
        sizes = (1024, 2048) if args.quick else (1024, 4096)
        for dtype, size in [(dt, size) for dt in ("fp16", "bf16") for size in sizes]:
            r = triton_vs_torch(size, dtype, budget_s=budget / 2)
            table.rows.append({"section": "triton", "case": f"matmul_triton {size}^3 {dtype} (autotuned {r['config']})",
                               "value": r["triton TFLOP/s"], "unit": "TFLOP/s", "cuBLAS": r["cuBLAS TFLOP/s"],
                               "triton / cuBLAS": r["ratio"], "kernels (CUDA graph)": r["kernel ratio"],
                               "max rel err": r["max rel err"]})
        sweep_n = 2048 if args.quick else 4096
        sweep = triton_block_sweep(sweep_n, budget_s=budget / 8)
        for r in sweep:
            table.rows.append({"section": "triton tiles", "case": f"tile {r['tile']} w{r['warps']} s{r['stages']}, "
                               f"{sweep_n}^3 fp16", "value": r["TFLOP/s"], "unit": "TFLOP/s",
                               "cuBLAS": r["cuBLAS TFLOP/s"], "triton / cuBLAS": r["ratio"]})
        table.figures["gemm_triton_tiles"] = _sweep_figure(sweep)
        spec = hardware.detect()
        table.notes.append(f"GPU: {spec.name if spec else 'unknown'}; CUDA events with L2 flushed before each run, "
                           "median; after 1 s of both untimed (the clock of sustained work), triton and cuBLAS timed in 15 "
                           "rounds, in alternating order; the ratio is the median of the rounds' ratios; acceptance: triton / cuBLAS "
                           ">= 0.95 at 4096^3 and >= 0.90 at 1024^3, FP16 and BF16. 'triton / cuBLAS' times the "
                           "Python calls, 'kernels (CUDA graph)' replays of the same calls captured in a CUDA graph: "
                           "they differ where the host issues a call more slowly than the GPU runs it (the per-call "
                           "time then measures the host; see triton_vs_torch).")
    else:
        table.notes.append("No GPU: the Triton-vs-cuBLAS rows and the TFLOP/s-vs-tile table run only on a GPU "
                           "(the interpreter checks the kernel's results on a CPU, not its speed).")
    return table


def _sweep_figure(rows: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['tile']}\nw{r['warps']} s{r['stages']}" for r in rows]
    ax.bar(labels, [r["TFLOP/s"] for r in rows], color="tab:blue", label="matmul_kernel_persistent")
    ax.axhline(rows[0]["cuBLAS TFLOP/s"], color="tab:green", ls="--", label="torch.matmul (cuBLAS)")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"FP16 {rows[0]['n']}^3: Triton tile size vs cuBLAS")
    ax.legend()
    fig.tight_layout()
    plt.close(fig)
    return fig
