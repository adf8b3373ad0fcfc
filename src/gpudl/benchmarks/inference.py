"""Inference: a fused kernel against the roofline's prediction, INT8 GEMMs against FP16, batching.

Three measurements of Unit 09, one table:

- fusion: bias + GELU + residual add in eager torch (three kernels), as one Triton kernel and
  through ``torch.compile``, timed with CUDA events; the measured speed-up of the fused kernel
  next to the roofline's prediction from the bytes each version moves (``--ncu``: Nsight
  Compute's DRAM bytes per kernel next to the model's, where ncu can read the counters);
- INT8: ``torch._int_mm`` (INT8 inputs, INT32 sums) against an FP16 matmul of the same shape,
  after checking the INT8 result equals exact integer arithmetic;
- batching: a small ResNet's latency and throughput against batch size, and which batches meet
  the 30 FPS latency budget (33 ms).

On a CPU (``--quick``) the sizes are small, the fused kernel runs in Triton's interpreter (its
time is Python's) and the INT8 GEMM is NumPy's in int32.
"""
from __future__ import annotations

import argparse
from typing import Any

from ..table import Table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", type=int, default=None, help="rows of the fused chain (default: 8192 GPU, 256 CPU)")
    parser.add_argument("--cols", type=int, default=None, help="columns (default: 8192 GPU, 1024 CPU)")
    parser.add_argument("--dtype", default=None, help="fp16 (GPU default) or fp32 (CPU default)")
    parser.add_argument("--ncu", action="store_true", help="also measure DRAM bytes per kernel with Nsight Compute")
    parser.add_argument("--gemm", type=int, default=None, help="INT8 vs FP16 GEMM size (default: 8192 GPU, 256 CPU)")
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


def _int8_rows(args: argparse.Namespace, cuda: bool, table: Table) -> None:
    import numpy as np
    import torch

    from .. import quantization as q, timing

    n = args.gemm or (8192 if cuda else 256)
    device = "cuda" if cuda else "cpu"
    g = torch.Generator().manual_seed(0)
    a8 = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8)
    b8 = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8)
    small = 64                                    # exactness on a corner, against int64 sums (no overflow)
    corner = q.int8_matmul(a8[:small].to(device), b8[:, :small].contiguous().to(device))
    exact = a8[:small].numpy().astype(np.int64) @ b8[:, :small].numpy().astype(np.int64)
    if not np.array_equal(corner.cpu().numpy().astype(np.int64), exact):
        raise AssertionError("the INT8 GEMM does not equal exact integer arithmetic")
    budget = {"budget_s": 0.3 if args.quick else 1.0}
    if cuda:
        a, b = a8.to(device), b8.to(device)
        int8 = timing.measure(lambda: q.int8_matmul(a, b), device, what="int8", **budget)
        ah, bh = a.half(), b.half()
        fp16 = timing.measure(lambda: ah @ bh, device, what="fp16", **budget)
        names = ("torch._int_mm INT8 -> INT32", "torch.matmul FP16")
    else:
        an, bn = a8.numpy(), b8.numpy()
        int8 = timing.measure(lambda: q.int8_matmul(an, bn), device, what="int8", **budget)
        af, bf = an.astype(np.float32), bn.astype(np.float32)
        fp16 = timing.measure(lambda: af @ bf, device, what="fp32", **budget)
        names = ("NumPy int8 -> int32", "NumPy float32 (BLAS)")
    flops = 2 * n ** 3
    for name, m in zip(names, (int8, fp16)):
        table.rows.append({"part": "int8", "case": f"{n}^3", "what": name, "median ms": m.median * 1e3,
                           "rate": f"{flops / m.median / 1e12:,.4g} TOP/s", "speed-up": fp16.median / m.median})
    table.notes.append(f"int8: a {small}x{n} by {n}x{small} corner equals exact (int64) integer arithmetic; speed-up is "
                       f"against {names[1]}")


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


def _figures(res: Any, points: list[Any], cuda: bool) -> dict[str, Any]:
    from matplotlib.figure import Figure          # no pyplot: no backend, no global state

    from .. import fusion, hardware, roofline, tuning

    figs = {}
    spec = hardware.detect() if cuda else None
    if spec is not None:
        fig = Figure(figsize=(7, 4.5))
        ops, fused = fusion.chain_ops(res.rows, res.cols, res.dtype), fusion.fused_op(res.rows, res.cols, res.dtype)
        ax = roofline.roofline_plot(spec, res.dtype, ops + [fused], tensor_cores=False, intensity_range=(0.05, 100),
                                    ax=fig.add_subplot())
        ax.plot([fused.intensity], [fused.flops / res.fused_s], "k*", ms=10, label="fused, measured")
        ax.legend(loc="lower right", fontsize=8)
        figs["inference_roofline"] = fig
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
    table = Table(f"Inference on {'the GPU' if cuda else 'the CPU'}: fusion, INT8, batching")
    res = _fusion_rows(args, cuda, table)
    _int8_rows(args, cuda, table)
    points = _batching_rows(args, cuda, table)
    table.figures = _figures(res, points, cuda)
    return table
