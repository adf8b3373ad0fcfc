"""Blocked GEMM vs np.matmul, simulated vs modelled traffic, batched GEMM; Triton vs cuBLAS (GPU).

The instructor's ``gpudl bench gemm``: the course edition's benchmark of the same name (batched
GEMM; on a GPU the tuned Triton GEMM against cuBLAS, and per tile shape), preceded by the rows
that measure lab 03's answers (``gpudl_instructor.references.lab03``), which the course edition
does not hold. CPU: GFLOP/s of ``gemm_blocked`` with the block of ``optimal_block`` (three tiles
in L3) and two others, against np.matmul, interleaved; the traffic model ``blocked_traffic`` (and
the course's ``naive_traffic``) against the LRU simulator of ``gpudl.gemm``.
"""
from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from gpudl import timing
from gpudl.benchmarks import gemm as course
from gpudl.gemm import cpu_cache_bytes, loop_trace, naive_traffic, simulate_traffic, traffic_table
from gpudl.table import Table

from ..references.lab03 import blocked_traffic, gemm_blocked, optimal_block


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, default=None, help="size of the CPU blocked GEMM (default 2048, --quick 1024)")
    p.add_argument("--block", type=int, default=None,
                   help="CPU tile size (default: optimal_block of the L3 cache in float64 words)")
    p.add_argument("--rounds", type=int, default=None, help="timed runs of each CPU GEMM (default 9, --quick 5)")
    course.add_arguments(p)


def run(args: argparse.Namespace) -> Table:
    table = Table("")
    if not args.gpu_only:
        _references(args, table)
    rest = course.run(args)
    table.title = ("GEMM blocking: blocked vs np.matmul, traffic model vs LRU simulation, "
                   + rest.title.split(": ", 1)[-1])
    table.rows += rest.rows
    table.notes += rest.notes
    table.figures.update(rest.figures)
    return table


def _references(args: argparse.Namespace, table: Table) -> None:
    """The rows of lab 03's answers: blocked GEMM on the CPU, the traffic model."""
    n = args.n or (1024 if args.quick else 2048)

    # 1. Blocked GEMM on the CPU: tiles chosen so that three fit in L3 (the lecture's sqrt(M / 3)).
    l3 = cpu_cache_bytes(3)
    block = args.block or optimal_block(l3 // 8)
    g = np.random.default_rng(0)
    A = g.standard_normal((n, n))      # (n, n) float64
    B = g.standard_normal((n, n))
    flops = 2 * n ** 3                 # a multiply-add is two FLOPs
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
    traffic = traffic_table(sim_n, (4, 8, 16) if args.quick else (4, 8, 16, 32), model=blocked_traffic)
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
