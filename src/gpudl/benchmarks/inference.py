"""Inference: a fused kernel against the roofline's prediction, INT8 GEMMs against FP16, batching.

Three measurements of Unit 09, one table:

- fusion: bias + GELU + residual add in eager torch (three kernels), as one Triton kernel and
  through ``torch.compile``, timed with CUDA events; the measured speed-up of the fused kernel
  next to the roofline's prediction from the bytes each version moves (``--ncu``: Nsight
  Compute's DRAM bytes per kernel next to the model's, where ncu can read the counters);
- INT8: INT8 x INT8 -> INT32 GEMMs against cuBLAS FP16 (``torch.matmul``) at 2048^3, 4096^3
  and 8192^3, side by side: ``torch._int_mm`` with B row-major (the layout trap: cuBLASLt's INT8
  kernels read B K-major, i.e. column-major, and a row-major B runs far below it), the same
  with B column-major (``quantization.int8_matmul``'s layout), and the Triton kernel
  ``gemm.int8.int8_matmul_triton`` (autotuned); each INT8 result is checked equal to the others
  and a corner to exact (int64) integer arithmetic. A fifth row is the INT8 linear layer's form
  of the Triton kernel: per-row and per-column scales in the epilogue, FP16 stored (half the
  bytes of INT32 sums, as the FP16 GEMM stores), checked against the scaled INT32 sums. The five
  GEMMs are warmed together and timed in turns, so no row gets the clock of an idle GPU, each per
  Python call and as a CUDA graph's replay ("graph": the kernels alone, which tells whether a small
  product's time is its launch). ``--record`` keeps all rows, with the device, date and command,
  in ``course/data/bench_inference.json`` (``RECORD_FILE``), which lecture 09 shows
  (``recorded_int8``: the INT8 rows);
- batching: a small ResNet's latency and throughput against batch size, and which batches meet
  the 30 FPS latency budget (33 ms).

On a CPU (``--quick``) the sizes are small, the fused kernel runs in Triton's interpreter (its
time is Python's) and the INT8 GEMM is NumPy's in int32; the GPU's INT8 rows are skipped (a note
says so) and the Triton INT8 kernel is only checked for exactness, in the interpreter.
``--parts`` runs some of the three (``--parts int8`` for the INT8 table alone).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..table import Table
from . import _record

PARTS = ("fusion", "int8", "batching")
FP16_ROW = "torch.matmul FP16 (cuBLAS)"
# The INT8 layer's row: the Triton GEMM with per-row and per-column scales in its epilogue, FP16 out
LAYER_ROW = "Triton INT8, scales in epilogue, FP16 out"
# Where ``--record`` keeps the rows (the registry's ``--record``): the course's data folder, beside
# the lecture that shows them.
RECORD_FILE = _record.path_of("inference")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=None, help="rows of the fused chain (default: 8192 GPU, 256 CPU)")
    parser.add_argument("--cols", type=int, default=None, help="columns (default: 8192 GPU, 1024 CPU)")
    parser.add_argument("--dtype", default=None, help="fp16 (GPU default) or fp32 (CPU default)")
    parser.add_argument("--ncu", action="store_true", help="also measure DRAM bytes per kernel with Nsight Compute")
    parser.add_argument("--gemm", type=int, nargs="+", default=None,
                        help="INT8 vs FP16 GEMM sizes n (n^3; default: 2048 4096 8192 GPU, 256 CPU)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="which measurements to run")
    parser.add_argument("--max-batch", type=int, default=None, help="largest batch of the sweep (default 512 GPU, 16 CPU)")


def _fusion_rows(args: argparse.Namespace, cuda: bool, table: Table) -> Any:
    from .. import fusion, hardware

    rows, cols = args.rows or (8192 if cuda else 256), args.cols or (8192 if cuda else 1024)
    dtype = args.dtype or ("fp16" if cuda else "fp32")
    budget = 0.3 if args.quick else 1.0
    res = fusion.measure_fusion(rows, cols, dtype, "cuda" if cuda else "cpu", budget_s=budget)
    spec = hardware.detect() if cuda else None
    peak_bw = hardware.peak_bandwidth(spec) if spec is not None else None
    case = f"{rows}x{cols} {res.dtype}"
    unfused_b = sum(op.bytes for op in fusion.chain_ops(rows, cols, res.dtype))
    fused_b = fusion.fused_op(rows, cols, res.dtype).bytes

    def rate(nbytes: float, seconds: float) -> str:
        gbs = nbytes / seconds / 1e9
        return f"{gbs:,.4g} GB/s" + (f" ({gbs * 1e9 / peak_bw:.0%} of peak)" if peak_bw else "")

    table.rows.append({"part": "fusion", "case": case, "what": "eager torch (3 kernels)", "median ms": res.unfused_s * 1e3,
                       "rate": rate(unfused_b, res.unfused_s), "speed-up": 1.0})
    table.rows.append({"part": "fusion", "case": case, "what": "fused Triton kernel", "median ms": res.fused_s * 1e3,
                       "rate": rate(fused_b, res.fused_s), "speed-up": res.measured, "predicted": res.predicted,
                       "measured/predicted": res.measured / res.predicted})
    if res.compiled_s is not None:
        table.rows.append({"part": "fusion", "case": case, "what": "torch.compile", "median ms": res.compiled_s * 1e3,
                           "rate": rate(fused_b, res.compiled_s), "speed-up": res.compiled_speedup,
                           "predicted": res.predicted, "measured/predicted": res.compiled_speedup / res.predicted})
    table.notes.append(f"fusion: the roofline predicts {res.predicted:.2f}x from the bytes moved, "
                       f"{unfused_b / 1e6:,.1f} MB eager vs {fused_b / 1e6:,.1f} MB fused"
                       + (f"; {res.note}" if res.note else ""))
    if args.ncu:
        from ..profiling import NcuError

        try:
            for r in fusion.ncu_vs_model(rows, cols, dtype):
                table.rows.append({"part": "ncu", "case": case, "what": f"{r['chain']}: {r['op']}",
                                   "ncu MB": r["ncu_bytes"] / 1e6, "model MB": r["model_bytes"] / 1e6,
                                   "ncu/model": r["ncu/model"], "rate": f"read {r['ncu_read'] / 1e6:,.1f} MB, "
                                                                         f"write {r['ncu_write'] / 1e6:,.1f} MB"})
        except NcuError as exc:
            table.notes.append(f"ncu: not measured: {exc}")
    return res


def _int8_exact(a8: Any, b8: Any, got: Any, small: int = 64) -> None:
    """``got`` (the product a8 @ b8 on the device) equals exact int64 arithmetic on a corner."""
    import torch

    exact = a8[:small].long() @ b8[:, :small].long()                  # on the CPU: exact
    if not torch.equal(got[:small, :small].cpu().long(), exact):
        raise AssertionError("an INT8 GEMM does not equal exact integer arithmetic")


def _int8_cuda(n: int, budget_s: float, rounds: int, warm_s: float) -> list[dict[str, Any]]:
    """The four GEMMs at n^3 on the GPU, checked, then warmed together and timed in ``rounds``
    rounds (each in the opposite order to the one before); each row's median over the rounds,
    and its speed-up as the median of its per-round ratios to FP16."""
    import statistics
    import time

    import torch

    from .. import hardware, quantization as q, timing
    from ..gemm import int8 as int8_gemm

    g = torch.Generator().manual_seed(n)
    a8 = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8)
    b8 = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8)
    a = a8.cuda()                                          # (M, K) row-major: K-major
    b_row = b8.cuda()                                      # (K, N) row-major: N-major, the trap
    b_col = q.column_major(b_row)                          # (K, N) column-major: K-major
    ah, bh = a.half(), b_row.half()
    # the quantized linear layer's scales (per row of the activations, per output channel), applied
    # in the Triton kernel's epilogue, which stores FP16 as the FP16 layer it replaces would
    sa = torch.rand(n, generator=g).mul_(1e-3).cuda()
    sb = torch.rand(n, generator=g).mul_(1e-3).cuda()
    calls = {
        FP16_ROW: lambda: torch.matmul(ah, bh),
        "torch._int_mm, B row-major": lambda: torch._int_mm(a, b_row),
        "torch._int_mm, B column-major": lambda: torch._int_mm(a, b_col),
        "Triton INT8 (int8_matmul_triton)": lambda: int8_gemm.int8_matmul_triton(a, b_col),
        LAYER_ROW: lambda: int8_gemm.int8_matmul_triton(a, b_col, scale_a=sa, scale_b=sb, out_dtype=torch.float16),
    }
    got = {name: fn() for name, fn in list(calls.items())[1:]}      # the Triton kernel autotunes here
    _int8_exact(a8, b8, got["torch._int_mm, B column-major"])
    layer = got.pop(LAYER_ROW).double()
    want = got["torch._int_mm, B column-major"].double() * sa.double()[:, None] * sb.double()[None, :]
    if not torch.allclose(layer, want, rtol=2e-3, atol=1e-3):        # FP16 rounding of the scaled sums
        raise AssertionError(f"{LAYER_ROW} differs from the INT32 sums scaled by more than FP16's rounding")
    del layer, want
    for name, c in got.items():
        if not torch.equal(c, got["torch._int_mm, B column-major"]):
            raise AssertionError(f"{name} differs from torch._int_mm: an INT8 GEMM is not exact")
    del got
    # Each call also as a CUDA graph's replay: the kernels without the Python that launches them, as
    # an inference engine replays a model. At 2048^3 a kernel runs about 20 us, near what a Python call
    # of the Triton kernel takes to issue; the two columns tell whether the launch is what is timed.
    graphs = {name: timing.cuda_graphed(fn) for name, fn in calls.items()}
    start = time.perf_counter()
    while time.perf_counter() - start < warm_s:                     # to the clock of sustained work
        for fn in (*calls.values(), *graphs.values()):
            fn()
        torch.cuda.synchronize()
    medians: dict[str, list[float]] = {name: [] for name in calls}
    graph_medians: dict[str, list[float]] = {name: [] for name in calls}
    for r in range(rounds):
        for name in (calls if r % 2 == 0 else reversed(calls)):
            medians[name].append(timing.measure(calls[name], "cuda", what=f"{name} {n}^3", budget_s=budget_s).median)
            graph_medians[name].append(timing.measure(graphs[name], "cuda", what=f"{name} {n}^3 (graph)",
                                                      budget_s=budget_s).median)
    spec = hardware.detect()
    peaks = {"fp16": hardware.peak_flops(spec, "fp16"), "int8": hardware.peak_flops(spec, "int8")} if spec else {}
    fp16, fp16_graph = medians[FP16_ROW], graph_medians[FP16_ROW]
    configs = {"Triton INT8 (int8_matmul_triton)": int8_gemm.best_int8_config(n, n, n, torch.int32),
               LAYER_ROW: int8_gemm.best_int8_config(n, n, n, torch.float16)}
    rows = []
    for name, times in medians.items():
        seconds = statistics.median(times)
        rate = 2 * n ** 3 / seconds
        peak = peaks.get("fp16" if name == FP16_ROW else "int8")
        if peak:
            timing.check_plausible(rate, peak, what=f"{name} {n}^3", unit="OP/s")
        rows.append({"part": "int8", "case": f"{n}^3", "what": name, "median ms": seconds * 1e3,
                     "rate": f"{rate / 1e12:,.4g} TOP/s" + (f" ({rate / peak:.0%} of peak)" if peak else ""),
                     "speed-up": statistics.median(f / t for f, t in zip(fp16, times)),
                     "graph ms": statistics.median(graph_medians[name]) * 1e3,
                     "graph speed-up": statistics.median(f / t for f, t in zip(fp16_graph, graph_medians[name])),
                     "config": (f"{cfg.label} w{cfg.num_warps} s{cfg.num_stages}"
                                if (cfg := configs.get(name)) else "")})
    return rows


def host_bound(rows: list[dict[str, Any]], margin: float = 1.15) -> list[str]:
    """A note for each row timed per call more than ``margin`` times slower than replayed from a
    CUDA graph: between timed calls the GPU waited for Python to issue the next one, so that row's
    per-call figure is the host's pace, not the kernel's (its graph figure is the kernel's)."""
    return [f"int8 {r['case']}: {r['what']} per call {r['median ms'] * 1e3:.1f} us against "
            f"{r['graph ms'] * 1e3:.1f} us replayed from a CUDA graph: the host, not the GPU, set the pace of its "
            "per-call timing"
            for r in rows if r.get("graph ms") and r["median ms"] > margin * r["graph ms"]]


def _int8_rows(args: argparse.Namespace, cuda: bool, table: Table) -> None:
    import numpy as np
    import torch

    from .. import quantization as q, timing

    sizes = args.gemm or ([2048, 4096, 8192] if cuda else [256])
    if any(n < 1 for n in sizes):
        raise ValueError(f"--gemm sizes must be positive, got {sizes}")
    if cuda and any(n <= 16 or n % 8 for n in sizes):
        raise ValueError(f"--gemm sizes on a GPU must be multiples of 8 above 16 (torch._int_mm's conditions), "
                         f"got {sizes}")
    if cuda:
        for n in sizes:
            table.rows += _int8_cuda(n, budget_s=0.3 if args.quick else 0.5, rounds=1 if args.quick else 3,
                                     warm_s=0.3 if args.quick else 1.0)
        table.notes.append("int8: every INT8 product equals torch._int_mm's with B column-major, and a 64x64 corner "
                           "equals exact (int64) arithmetic; speed-up is against torch.matmul FP16 (median of the "
                           "rounds' ratios); B row-major is the layout trap (INT8 tensor cores read B K-major); "
                           "graph: the same calls captured in a CUDA graph and replayed (the kernels, without the "
                           "Python that issues each call)")
        table.notes += host_bound([r for r in table.rows if r.get("part") == "int8"])
        return
    from ..gemm import int8 as int8_gemm

    g = torch.Generator().manual_seed(0)
    for n in sizes:
        a8 = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8)
        b8 = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8)
        an, bn = a8.numpy(), b8.numpy()
        _int8_exact(a8, b8, torch.from_numpy(q.int8_matmul(an, bn)))
        budget = {"budget_s": 0.3 if args.quick else 1.0}
        int8 = timing.measure(lambda: q.int8_matmul(an, bn), "cpu", what="int8", **budget)
        af, bf = an.astype(np.float32), bn.astype(np.float32)
        fp32 = timing.measure(lambda: af @ bf, "cpu", what="fp32", **budget)
        for name, m in (("NumPy int8 -> int32", int8), ("NumPy float32 (BLAS)", fp32)):
            table.rows.append({"part": "int8", "case": f"{n}^3", "what": name, "median ms": m.median * 1e3,
                               "rate": f"{2 * n ** 3 / m.median / 1e12:,.4g} TOP/s",
                               "speed-up": fp32.median / m.median})
    small = torch.randint(-127, 128, (48, 80), generator=g, dtype=torch.int8), \
        torch.randint(-127, 128, (80, 40), generator=g, dtype=torch.int8)
    exact = torch.equal(int8_gemm.int8_matmul_triton(*small).long(), small[0].long() @ small[1].long())
    if not exact:
        raise AssertionError("the Triton INT8 kernel does not equal exact integer arithmetic in the interpreter")
    table.notes.append("int8: no GPU, so the GPU rows (torch.matmul FP16, torch._int_mm with B row-major and "
                       "column-major, the Triton INT8 kernel on tensor cores) are skipped; the Triton INT8 kernel "
                       "ran in Triton's interpreter (48x80 by 80x40) and equals exact integer arithmetic; speed-up "
                       "is against NumPy float32")


def recorded_int8(path: str | Path | None = None) -> dict[str, Any]:
    """The INT8 rows ``gpudl bench inference --record`` kept, per GPU: {GPU: {device, date,
    command, torch, triton, rows}}, each row {n, what, median ms, TOP/s, speed-up, graph ms, graph
    speed-up (None in a record made before CUDA graphs were timed), config}; empty when nothing was
    recorded."""
    out = {}
    for gpu, entry in _record.recorded("inference", path).items():
        rows = [{"n": (n := int(r["case"].split("^")[0])), "what": r["what"], "median ms": r["median ms"],
                 "TOP/s": 2 * n ** 3 / (r["median ms"] * 1e-3) / 1e12, "speed-up": r["speed-up"],
                 "graph speed-up": r.get("graph speed-up"), "graph ms": r.get("graph ms"),
                 "config": r.get("config") or ""} for r in entry["rows"] if r.get("part") == "int8"]
        if rows:
            out[gpu] = {**{k: v for k, v in entry.items() if k not in ("rows", "notes", "title")}, "rows": rows}
    return out


def _batching_rows(args: argparse.Namespace, cuda: bool, table: Table) -> list[Any]:
    import torch

    from .. import profiling, tuning

    device = "cuda" if cuda else "cpu"
    top = args.max_batch or (512 if cuda else 16)
    batches = [b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if b <= top]
    channels, size = (64, 56) if cuda else (16, 32)
    model = profiling.small_resnet(channels, blocks=3, ranges=False).to(device)
    g = torch.Generator().manual_seed(0)
    points = tuning.batch_sweep(model, lambda b: torch.randn(b, 3, size, size, generator=g).to(device), batches,
                                device=device, budget_s=0.3 if args.quick else 0.5)
    for p in points:
        table.rows.append({"part": "batching", "case": f"ResNet-ish {channels}ch {size}x{size}", "what": f"batch {p.batch}",
                           "median ms": p.latency_s * 1e3, "rate": f"{p.throughput:,.0f} frames/s",
                           "within 33 ms": p.latency_s <= tuning.LATENCY_BUDGET_30FPS})
    if not any(p.latency_s <= tuning.LATENCY_BUDGET_30FPS for p in points):
        table.notes.append("batching: no batch meets the 33 ms budget")
    return points


def _figures(res: Any, points: list[Any] | None, cuda: bool) -> dict[str, Any]:
    from matplotlib.figure import Figure          # no pyplot: no backend, no global state

    from .. import fusion, hardware, roofline, tuning

    figs = {}
    spec = hardware.detect() if cuda else None
    if spec is not None and res is not None:
        fig = Figure(figsize=(7, 4.5))
        ops, fused = fusion.chain_ops(res.rows, res.cols, res.dtype), fusion.fused_op(res.rows, res.cols, res.dtype)
        ax = roofline.roofline_plot(spec, res.dtype, ops + [fused], tensor_cores=False, intensity_range=(0.05, 100),
                                    ax=fig.add_subplot())
        ax.plot([fused.intensity], [fused.flops / res.fused_s], "k*", ms=10, label="fused, measured")
        ax.legend(loc="lower right", fontsize=8)
        figs["inference_roofline"] = fig
    if not points:
        return figs
    fig = Figure(figsize=(6.5, 4))
    ax1 = fig.add_subplot()
    b = [p.batch for p in points]
    ax1.loglog(b, [p.latency_s * 1e3 for p in points], "o-", label="latency (ms)")
    ax1.axhline(tuning.LATENCY_BUDGET_30FPS * 1e3, color="red", ls="--", lw=1, label="33 ms budget")
    ax1.set_xlabel("batch size")
    ax1.set_ylabel("latency per batch (ms)")
    ax2 = ax1.twinx()
    ax2.loglog(b, [p.throughput for p in points], "s-", color="tab:green", label="throughput (frames/s)")
    ax2.set_ylabel("throughput (frames/s)")
    ax1.legend(loc="upper left", fontsize=8)
    ax2.legend(loc="lower right", fontsize=8)
    ax1.set_title("latency and throughput against batch size")
    figs["inference_batching"] = fig
    return figs


def run(args: argparse.Namespace) -> Table:
    import torch

    cuda = torch.cuda.is_available()
    parts = [p for p in PARTS if p in args.parts]
    table = Table(f"Inference on {'the GPU' if cuda else 'the CPU'}: {', '.join(parts)}")
    res = _fusion_rows(args, cuda, table) if "fusion" in parts else None
    if "int8" in parts:
        _int8_rows(args, cuda, table)
    points = _batching_rows(args, cuda, table) if "batching" in parts else None
    table.figures = _figures(res, points, cuda)
    return table
