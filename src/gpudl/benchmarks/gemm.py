"""Blocked GEMM vs np.matmul, simulated vs modelled traffic, batched GEMM; Triton vs cuBLAS (GPU).

On a GPU also a table (and figure) of the Triton kernel's TFLOP/s for several tile sizes.
CPU: GFLOP/s of ``gpudl.gemm.gemm_blocked`` with the block of ``optimal_block`` (three tiles
in L3) and two others, against np.matmul; the traffic model of the lecture against the LRU
simulator; a loop of small GEMMs against one batched call. GPU: ``matmul_triton``
(autotuned) against cuBLAS at 1024^3 and 4096^3 in FP16 and BF16, and per tile shape.
"""
from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from .. import hardware, timing
from ..bench import gemm_flops
from ..gemm import (cpu_cache_bytes, gemm_batched, gemm_batched_loop, gemm_blocked, loop_trace, naive_traffic,
                    optimal_block, simulate_traffic, traffic_table, triton_block_sweep, triton_vs_torch)
from ..table import Table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, default=None, help="size of the CPU blocked GEMM (default 2048, --quick 1024)")
    p.add_argument("--block", type=int, default=None,
                   help="CPU tile size (default: optimal_block of the L3 cache in float64 words)")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per row")
    p.add_argument("--rounds", type=int, default=None, help="timed runs of each CPU GEMM (default 9, --quick 5)")
    p.add_argument("--gpu-only", action="store_true", help="only the GPU rows (Triton vs cuBLAS, tile sweep)")


def run(args: argparse.Namespace) -> Table:
    n = args.n or (1024 if args.quick else 2048)
    budget = args.budget or (1.0 if args.quick else 4.0)
    cuda = hardware.device() == "cuda"
    table = Table("GEMM blocking: blocked vs np.matmul, traffic model vs LRU simulation, batched GEMM"
                        + (", Triton vs cuBLAS" if cuda else ""))

    batch, s = (2048, 8) if args.quick else (8192, 8)        # the batched GEMMs of section 3
    if not args.gpu_only:
        # 1. Blocked GEMM on the CPU: tiles chosen so that three fit in L3 (the lecture's sqrt(M / 3)).
        l3 = cpu_cache_bytes(3)
        block = args.block or optimal_block(l3 // 8)
        g = np.random.default_rng(0)
        A = g.standard_normal((n, n))      # (n, n) float64
        B = g.standard_normal((n, n))
        flops = gemm_flops(n, n, n)
        blocks = sorted({block, 256, 512})
        # One run of each in turn, round after round: a busy machine slows all of them alike.
        work = {"np.matmul": lambda: A @ B} | {f"b={b}": (lambda b=b: gemm_blocked(A, B, b)) for b in blocks}
        for fn in work.values():
            fn()                                              # warm up: threads, pages, caches
        meas: dict[str, list[float]] = {name: [] for name in work}
        for _ in range(args.rounds or (5 if args.quick else 9)):
            for name, fn in work.items():
                meas[name].extend(timing.time_cpu(fn, warmup=0, min_runs=1, max_runs=1).times)
        base = timing.Measurement(tuple(meas["np.matmul"]), what="np.matmul")
        table.rows.append({"section": "cpu blocked", "case": f"np.matmul n={n} fp64", "value": flops / base.median / 1e9,
                           "unit": "GFLOP/s", "time / np.matmul": 1.0, "runs": base.count})
        for b in blocks:
            m = timing.Measurement(tuple(meas[f"b={b}"]), what=f"gemm_blocked b={b}")
            tag = " (optimal_block of L3)" if b == block else ""
            table.rows.append({"section": "cpu blocked", "case": f"gemm_blocked n={n} b={b}{tag}",
                               "value": flops / m.median / 1e9, "unit": "GFLOP/s",
                               "time / np.matmul": m.median / base.median, "runs": m.count})
        table.notes.append(f"CPU: L3 {l3 / 2**20:.0f} MiB = {l3 // 8} float64 words -> optimal_block = {block}; "
                           "tile products are np.matmul on views; medians of interleaved runs.")

        # 2. The traffic model against an LRU simulation.
        sim_n = 48 if args.quick else 64
        traffic = traffic_table(sim_n, (4, 8, 16) if args.quick else (4, 8, 16, 32))
        table.figures["gemm_traffic"] = _traffic_figure(traffic)
        for r in traffic:
            table.rows.append({"section": "traffic", "case": f"blocked b={r['block']}, n={sim_n}, cache {r['cache words']} "
                               f"words, lines of {r['line words']}", "value": r["simulated words"], "unit": "words",
                               "model": r["model words"], "simulated / model": r["simulated/model"]})
        naive_cap = 2 * sim_n + 8
        sim = simulate_traffic(loop_trace(sim_n, "ijk"), naive_cap, 1).words
        table.rows.append({"section": "traffic", "case": f"ijk loops, n={sim_n}, cache {naive_cap} words, lines of 1",
                           "value": sim, "unit": "words", "model": naive_traffic(sim_n),
                           "simulated / model": sim / naive_traffic(sim_n)})
        table.notes.append("Traffic: LRU, write-back, fully associative; blocked model (2N+2)n^2 holds when the cache "
                           "has room for 1.5x the three tiles (LRU keeps the previous step's tiles too) and the line size "
                           "divides the block; naive model n^3+3n^2 when a row of A fits but B does not.")

        # 3. Batched small GEMMs: a loop of calls vs one call.
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
        # 4. The Triton kernel against cuBLAS.
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


def _traffic_figure(rows: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    blocks = [r["block"] for r in rows]
    ax.plot(blocks, [r["model words"] for r in rows], "k-", label="model (2N+2) n^2")
    ax.plot(blocks, [r["simulated words"] for r in rows], "o", label="LRU simulation (cache sized per block)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("block b")
    ax.set_ylabel("words moved")
    ax.set_title(f"blocked GEMM traffic, n = {rows[0]['n']}, lines of {rows[0]['line words']} words")
    ax.legend()
    fig.tight_layout()
    plt.close(fig)
    return fig


def _sweep_figure(rows: list[dict[str, Any]]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['tile']}\nw{r['warps']} s{r['stages']}" for r in rows]
    ax.bar(labels, [r["TFLOP/s"] for r in rows], color="tab:blue", label="matmul_kernel")
    ax.axhline(rows[0]["cuBLAS TFLOP/s"], color="tab:green", ls="--", label="torch.matmul (cuBLAS)")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"FP16 {rows[0]['n']}^3: Triton tile size vs cuBLAS")
    ax.legend()
    fig.tight_layout()
    plt.close(fig)
    return fig
