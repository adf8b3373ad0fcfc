"""All-reduce bus bandwidth vs message size (NCCL, hand-written ring); DDP step time with/without overlap.

On a machine with k >= 2 GPUs (default: all visible), one process per GPU over NCCL:

1. ``dist.all_reduce`` and lab 10's ``ring_all_reduce`` (the hand-written ring on
   NCCL point-to-point) for messages from 1 KiB to 1 GiB: time per call (the slowest rank's
   median), nccl-tests' algbw = N / t and busbw = algbw x 2 (k - 1) / k, beside the GPU's NVLink
   bandwidth (one direction), which busbw approaches for large messages, and beside the lecture's
   cost model of the ring, 2 (k - 1) alpha + 2 (k - 1) / k N / B (``model_us``), with B the NVLink
   bandwidth and alpha fitted to the ring's time on the smallest message (on the CPU, B fitted to
   its time on the largest: there is no link to read it from);
2. an MLP's training step with DistributedDataParallel (bucket all-reduces overlapped with
   backward), with every gradient all-reduced after backward (no overlap: one ``dist.all_reduce``
   per tensor), and without communication; then DDP on 1 GPU and on k GPUs at the same per-GPU
   batch (weak scaling: efficiency = t(1 GPU) / t(k GPUs)).

``--quick``: the same on the CPU with gloo, 2 processes, 1 KiB to 1 MiB and a small MLP.
Every process inherits the environment unchanged (set ``NCCL_NVLS_ENABLE=0`` and friends before
running it where NVLink multicast must stay off).

The instructor's benchmark: it measures lab 10's answers (the ring all-reduce and nccl-tests' bus
bandwidth of ``gpudl_instructor.references.lab10``), which the course edition does not hold.
"""
from __future__ import annotations

import argparse

from gpudl.collectives import cost, launch
from gpudl.collectives.measure import all_reduce_times, ddp_step_times, slowest
from gpudl.table import Table

from ..references.lab10 import bus_bandwidth, bus_bandwidth_factor, ring_all_reduce, ring_all_reduce_time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=0, help="GPUs to use (default: all visible)")
    parser.add_argument("--min-bytes", type=int, default=1 << 10, help="smallest message (default 1 KiB)")
    parser.add_argument("--max-bytes", type=int, default=1 << 30, help="largest message (default 1 GiB)")
    parser.add_argument("--width", type=int, default=4096, help="MLP width for the DDP step (default 4096)")
    parser.add_argument("--layers", type=int, default=8, help="MLP layers (default 8)")
    parser.add_argument("--batch", type=int, default=1024, help="examples per GPU per step (default 1024)")
    parser.add_argument("--runs", type=int, default=10, help="timed runs per measurement (default 10)")


def _sizes(lo: int, hi: int) -> list[int]:
    sizes, n = [], lo
    while n <= hi:
        sizes.append(n)
        n *= 4 if n < (1 << 20) else 2
    return sizes


def _fmt_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def run(args: argparse.Namespace) -> Table:
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if args.gpus and not 2 <= args.gpus <= gpus:
        raise RuntimeError(f"--gpus {args.gpus}: NCCL needs 2 or more GPUs, one per process, and {gpus} are visible; "
                           "`gpudl bench collectives --quick` runs on the CPU with gloo")
    fallback = not args.quick and gpus < 2
    if args.quick or fallback:
        backend, k = "gloo", 2
        sizes = _sizes(1 << 10, 1 << 20)
        widths, batch, runs = (256,) * 4, 64, 5
        device = "CPU (gloo)"
    else:
        k = args.gpus or gpus
        backend = "nccl"
        sizes = _sizes(args.min_bytes, args.max_bytes)
        widths, batch, runs = (args.width,) * (args.layers + 1), args.batch, args.runs
        device = f"{k} x {torch.cuda.get_device_name(0)} (NCCL)"
    timeout = 600.0
    torch_t = slowest(launch(all_reduce_times, k, sizes, "torch", runs, backend=backend, timeout=timeout, echo=False))
    ring_t = slowest(launch(all_reduce_times, k, sizes, ring_all_reduce, runs, backend=backend, timeout=timeout,
                            echo=False))
    nvlink = cost.nvlink_bandwidth(torch.cuda.get_device_name(0)) if backend == "nccl" else None
    bandwidth, alpha = fit_ring_model(sizes, ring_t, k, nvlink)
    table = Table(f"All-reduce bus bandwidth and DDP step time on {device}")
    for n, t, r in zip(sizes, torch_t, ring_t):
        row = {"what": "all-reduce", "size": _fmt_bytes(n), "bytes": n,
               "torch_us": t * 1e6, "torch_algbw_GBps": n / t / 1e9,
               "torch_busbw_GBps": bus_bandwidth("all_reduce", n, t, k) / 1e9,
               "ring_us": r * 1e6, "ring_busbw_GBps": bus_bandwidth("all_reduce", n, r, k) / 1e9,
               "model_us": ring_all_reduce_time(n, k, bandwidth, alpha) * 1e6}
        if nvlink:
            row["nvlink_GBps"] = nvlink / 1e9
        table.rows.append(row)

    modes = ("compute", "no_overlap", "ddp")
    per_k = slowest(launch(ddp_step_times, k, widths, batch, modes, runs, backend=backend, timeout=timeout,
                           echo=False, preload=("torch._dynamo",)))
    one = slowest(launch(ddp_step_times, 1, widths, batch, ("ddp",), runs, backend=backend, timeout=timeout,
                         echo=False, preload=("torch._dynamo",)))
    params = sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    for mode in modes:
        table.rows.append({"what": f"step: {mode}", "size": f"{params * 4 / 2**20:.0f} MiB grads", "bytes": params * 4,
                           f"ms ({k} ranks)": per_k[mode] * 1e3})
    table.rows.append({"what": "step: ddp, 1 rank", "size": f"{params * 4 / 2**20:.0f} MiB grads",
                       "bytes": params * 4, "ms (1 rank)": one["ddp"] * 1e3,
                       "weak-scaling efficiency": one["ddp"] / per_k["ddp"]})
    big = max(range(len(sizes)), key=lambda i: sizes[i])
    table.notes += [
        f"busbw = algbw x 2(k-1)/k with k = {k}; each time is the slowest rank's median of {runs} runs.",
        f"model_us: the lecture's ring, 2(k-1) alpha + 2(k-1)/k N/B, with B = {bandwidth / 1e9:.3g} GB/s "
        + ("(NVLink, one way)" if nvlink else "(fitted to the ring's time on the largest message)")
        + f" and alpha = {alpha * 1e6:.3g} us (fitted to its time on the smallest).",
        f"largest message ({_fmt_bytes(sizes[big])}): dist.all_reduce ({backend}) "
        f"{table.rows[big]['torch_busbw_GBps']:.3g} GB/s, hand-written ring {table.rows[big]['ring_busbw_GBps']:.3g} "
        "GB/s busbw"
        + (f"; NVLink {nvlink / 1e9:.0f} GB/s one way" if nvlink else ""),
        f"DDP step ({len(widths) - 1}-layer MLP, width {widths[1]}, batch {batch} per rank): overlap "
        f"{per_k['ddp'] * 1e3:.2f} ms, no overlap {per_k['no_overlap'] * 1e3:.2f} ms, no communication "
        f"{per_k['compute'] * 1e3:.2f} ms; 1 rank {one['ddp'] * 1e3:.2f} ms: weak-scaling efficiency "
        f"{one['ddp'] / per_k['ddp']:.2f} on {k} ranks",
    ]
    if fallback:
        table.notes.insert(0, f"{gpus} GPU(s) visible: NCCL needs 2 or more, so this ran the --quick form (gloo).")
    table.figures["collectives_busbw"] = _plot_busbw(sizes, table.rows[:len(sizes)], nvlink, device, k)
    table.figures["collectives_ddp"] = _plot_ddp(per_k, one, k)
    return table


def fit_ring_model(sizes: list[int], ring_seconds: list[float], k: int,
                   link: float | None) -> tuple[float, float]:
    """(B, alpha) of the lecture's ring model, 2 (k - 1) alpha + 2 (k - 1) / k N / B: B the link's
    bandwidth where it is known, else fitted with alpha so the model meets the smallest and the
    largest message's times; alpha fitted so it meets the smallest message's time (never below 0)."""
    lo = min(range(len(sizes)), key=lambda i: sizes[i])
    hi = max(range(len(sizes)), key=lambda i: sizes[i])
    per_byte = bus_bandwidth_factor("all_reduce", k)     # bytes each link carries per byte of the message
    if link:
        bandwidth = link
    else:                                            # the slope between the two ends (the longer one if noise inverts them)
        slope = (ring_seconds[hi] - ring_seconds[lo]) / (sizes[hi] - sizes[lo]) if sizes[hi] > sizes[lo] else 0.0
        bandwidth = per_byte / slope if slope > 0 else per_byte * sizes[hi] / ring_seconds[hi]
    alpha = max(0.0, (ring_seconds[lo] - per_byte * sizes[lo] / bandwidth) / (2 * (k - 1)))
    return bandwidth, alpha


def _plot_busbw(sizes, rows, nvlink, device, k):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(sizes, [r["torch_busbw_GBps"] for r in rows], "o-", label="dist.all_reduce")
    ax.plot(sizes, [r["ring_busbw_GBps"] for r in rows], "s-", label="hand-written ring (point-to-point)")
    ax.plot(sizes, [bus_bandwidth("all_reduce", n, r["model_us"] / 1e6, k) / 1e9 for n, r in zip(sizes, rows)],
            ":", color="black", label="the lecture's ring model")
    if nvlink:
        ax.axhline(nvlink / 1e9, color="gray", ls="--", label=f"NVLink, one way ({nvlink / 1e9:.0f} GB/s)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"all-reduce on {device}")
    ax.legend()
    fig.tight_layout()
    return fig


def _plot_ddp(per_k, one, k):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    labels = ["no communication", "no overlap", "DDP (overlap)", "DDP, 1 rank"]
    values = [per_k["compute"], per_k["no_overlap"], per_k["ddp"], one["ddp"]]
    ax.barh(labels, [v * 1e3 for v in values])
    ax.set_xlabel("ms per step")
    ax.set_title(f"one training step, {k} ranks")
    fig.tight_layout()
    return fig
