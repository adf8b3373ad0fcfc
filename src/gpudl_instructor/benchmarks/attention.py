"""Attention: Triton flash vs torch SDPA vs naive TFLOP/s (GPU); naive vs tiled memory (CPU).

On a GPU: forward TFLOP/s of torch's SDPA, ``flash_attention_triton`` (tuned),
``flash_attention_triton_plain`` and naive attention (three kernels) against the sequence
length L (256 to 16384), causal and not, with their extra memory, error against SDPA, and the
host's time per call (what a short kernel waits for). On a CPU (or with ``--memory``): the
peak NumPy memory of naive attention (quadratic in L) and of the tiled ``flash_attention``
(linear in L), as tracemalloc sees it.

The instructor's benchmark: it measures lab 07's answers (the Triton kernels, the NumPy naive and
tiled attention of ``gpudl_instructor.references.lab07``), which the course edition does not hold.
"""
from __future__ import annotations

import argparse

import numpy as np

from gpudl import hardware
from gpudl.attention import attention_workspace_bytes, naive_attention_torch, peak_traced_bytes
from gpudl.table import Table
from gpudl.timing import check_plausible, host_time, time_cpu, time_cuda

from ..references import lab07
from ..references.lab07 import (attention_flops, flash_attention, flash_attention_triton,
                                flash_attention_triton_plain, scaled_dot_product_attention)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lengths", type=int, nargs="+", help="sequence lengths")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--dtype", choices=("fp16", "bf16", "fp32"), default="fp16")
    p.add_argument("--causal", nargs="?", const="yes", default="both", choices=("both", "yes", "no"),
                   help="causal attention (--causal), not causal (--causal no) or both (the default on a GPU)")
    p.add_argument("--rounds", type=int, default=2, help="alternating timing rounds per length (GPU)")
    p.add_argument("--block", type=int, default=64, help="tile of the NumPy flash attention")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timing per measurement (GPU)")
    p.add_argument("--memory", action="store_true", help="the NumPy memory table, also on a GPU machine")


def run(args: argparse.Namespace) -> Table:
    on_gpu = hardware.device() == "cuda" and not args.memory
    if args.lengths is None:
        if on_gpu:
            args.lengths = [1024, 4096] if args.quick else [256, 512, 1024, 2048, 4096, 8192, 16384]
        else:
            args.lengths = [1024, 4096] if args.quick else [256, 512, 1024, 2048, 4096]
    if args.quick:
        args.budget = min(args.budget, 0.3)
    args.causal_modes = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    if on_gpu:
        return _bench_gpu(args)
    table = _bench_memory(args)
    if hardware.device() != "cuda":
        table.notes.append("No GPU here: the TFLOP/s rows (Triton flash vs torch SDPA vs naive) appear on a CUDA device.")
    return table


def _bench_memory(args: argparse.Namespace) -> Table:
    """The CPU half: peak NumPy memory of naive and tiled attention against L."""
    causal = args.causal == "yes"
    table = Table(f"attention memory in NumPy: one head, d={args.head_dim}, float32, flash block {args.block}")
    rng = np.random.default_rng(0)
    naive_mib, flash_mib = [], []
    for n in args.lengths:
        q, k, v = (rng.standard_normal((n, args.head_dim)).astype(np.float32) for _ in range(3))
        ref, naive_peak = peak_traced_bytes(scaled_dot_product_attention, q, k, v, causal=causal)
        out, flash_peak = peak_traced_bytes(flash_attention, q, k, v, args.block, causal=causal)
        err = float(np.max(np.abs(out - ref)))
        for method, peak, fn in (("naive", naive_peak, scaled_dot_product_attention), ("flash", flash_peak, flash_attention)):
            extra = (args.block,) if method == "flash" else ()
            t = time_cpu(lambda: fn(q, k, v, *extra, causal=causal), warmup=0, min_runs=3, max_runs=3,
                         what=f"{method} L={n}")
            model = attention_workspace_bytes(n, n, args.head_dim, method=method, block=args.block) + n * args.head_dim * 4
            table.rows.append({"L": n, "method": method, "peak MiB (traced)": peak / 2**20,
                               "model MiB (work+out)": model / 2**20, "peak / (L*d*4 B)": peak / (n * args.head_dim * 4),
                               "ms (median of 3)": t.median * 1e3, "max |flash - naive|": err if method == "flash" else None})
        naive_mib.append(naive_peak / 2**20)
        flash_mib.append(flash_peak / 2**20)
    table.notes.append("peak: tracemalloc's peak of NumPy allocations during the call, less what was allocated before. "
                       "naive holds the L x L scores (and the softmax's temporaries): it grows 4x per doubling of L; "
                       "flash holds tiles, an accumulator and the output: it grows 2x, O(L d).")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return table
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    ax.loglog(args.lengths, naive_mib, "o-", label="naive (L x L scores)")
    ax.loglog(args.lengths, flash_mib, "s-", label=f"flash, block {args.block}")
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("peak memory (MiB)")
    ax.set_title("attention memory, NumPy, one head")
    ax.legend()
    table.figures["attention_memory"] = fig
    return table


def _bench_gpu(args: argparse.Namespace) -> Table:
    """The GPU half: TFLOP/s of SDPA, the tuned and plain Triton kernels and naive attention."""
    import torch
    import torch.nn.functional as F

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    spec = hardware.detect()
    peak = hardware.peak_flops(spec, args.dtype) if spec else 0.0
    b, h, d = args.batch, args.heads, args.head_dim
    modes = args.causal_modes
    table = Table(f"attention forward on {spec.name if spec else 'cuda'}: batch {b}, {h} heads, head dim {d}, "
                  f"{args.dtype}, " + " and ".join("causal" if c else "not causal" for c in modes))
    names = ("torch SDPA", "flash_attention_triton", "flash_attention_triton_plain", "naive (3 kernels)")
    fns = {"torch SDPA": lambda q, k, v, c: F.scaled_dot_product_attention(q, k, v, is_causal=c),
           "flash_attention_triton": lambda q, k, v, c: flash_attention_triton(q, k, v, causal=c),
           "flash_attention_triton_plain": lambda q, k, v, c: flash_attention_triton_plain(q, k, v, causal=c),
           "naive (3 kernels)": lambda q, k, v, c: naive_attention_torch(q, k, v, causal=c)}
    series: dict[tuple[str, bool], list[tuple[int, float]]] = {(name, c): [] for name in names for c in modes}
    ratios: dict[tuple[str, bool], list[tuple[int, float]]] = {(name, c): [] for name in names[1:3] for c in modes}
    free = torch.cuda.mem_get_info()[0]
    host: dict[str, float | None] = {}
    for causal in modes:
        for n in args.lengths:
            g = torch.Generator(device="cuda").manual_seed(n)
            q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=g) for _ in range(3))
            flops = attention_flops(n, n, d, batch=b * h, causal=causal)
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            run = {}
            for name in names:
                if name.startswith("naive") and 3 * b * h * n * n * q.element_size() > 0.6 * free:
                    table.notes.append(f"naive skipped at L={n}: its scores need "
                                       f"{b * h * n * n * q.element_size() / 2**30:.1f} GiB")
                    continue
                fn = (lambda name=name: fns[name](q, k, v, causal))
                fn()                                                   # compile and autotune outside the figures
                torch.cuda.synchronize()
                if n == args.lengths[0] and causal == modes[0]:
                    seconds = host_time(fn)
                    host[name] = None if seconds is None else seconds * 1e6
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
                out = fn()
                torch.cuda.synchronize()
                extra = torch.cuda.max_memory_allocated() - base       # the output and any workspace
                err = float((out.float() - ref.float()).abs().max())
                del out
                run[name] = (fn, extra, err)
            # alternating rounds, each method keeping its best: clock drift hits all of them alike
            best: dict[str, float] = {}
            for _ in range(max(1, args.rounds)):
                for name, (fn, _, _) in run.items():
                    m = time_cuda(fn, budget_s=args.budget / max(1, args.rounds), what=f"{name} L={n}")
                    best[name] = min(best.get(name, float("inf")), m.median)
            for name, (fn, extra, err) in run.items():
                rate = flops / best[name]
                if peak:
                    check_plausible(rate, peak, what=f"{name} at L={n}")
                vs = best["torch SDPA"] / best[name]
                series[(name, causal)].append((n, rate / 1e12))
                if (name, causal) in ratios:
                    ratios[(name, causal)].append((n, vs))
                config = lab07._chosen_label(n, n, d, causal, dtype, torch.cuda.current_device()) \
                    if name == "flash_attention_triton" else ""
                table.rows.append({"L": n, "causal": causal, "method": name, "config": config, "ms": best[name] * 1e3,
                                   "TFLOP/s": rate / 1e12, "vs SDPA": vs,
                                   "% of peak": 100 * rate / peak if peak else None,
                                   "extra GiB": extra / 2**30, "max |err| vs SDPA": err,
                                   "host us/call": host.get(name) if (n, causal) == (args.lengths[0], modes[0])
                                   else None})
            del q, k, v, ref, run
            torch.cuda.empty_cache()
    table.notes.append("FLOPs: 4 * batch * heads * L^2 * d (the two products; causal counts visible pairs only). "
                       f"Times: the best of {max(1, args.rounds)} alternating rounds' medians of CUDA-event runs with "
                       "the L2 flushed before each (gpudl.timing.time_cuda). "
                       "extra GiB: peak memory allocated by one call (output and workspace) beyond q, k, v.")
    for causal in modes:
        tuned, plain = dict(ratios[("flash_attention_triton", causal)]), dict(ratios[("flash_attention_triton_plain",
                                                                                       causal)])
        if tuned:
            worst = min(tuned, key=tuned.get)
            behind = [n for n in tuned if n in plain and tuned[n] < plain[n]]
            table.notes.append(f"{'causal' if causal else 'not causal'}: tuned / SDPA from {tuned[worst]:.2f}x "
                               f"(L={worst}) to {max(tuned.values()):.2f}x; tuned behind plain at "
                               f"{'L=' + ', '.join(map(str, behind)) if behind else 'no length'}")
    if any(v is not None for v in host.values()):
        table.notes.append(f"host time per call at L={args.lengths[0]} (GPU busy, launches queued): " + ", ".join(
            f"{name} {us:.0f} us" for name, us in host.items() if us is not None) +
            ". A kernel shorter than its call's host time leaves the GPU idle between calls; the L2 flush "
            "before each timed run hides up to its own duration of it.")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return table
    fig = Figure(figsize=(6 * len(modes), 4))
    axes = fig.subplots(1, len(modes), squeeze=False)[0]
    for ax, causal in zip(axes, modes):
        for name in names:
            pts = series[(name, causal)]
            if pts:
                ax.plot(*zip(*pts), "o-", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length L")
        ax.set_ylabel("TFLOP/s")
        ax.set_title(f"{'causal' if causal else 'not causal'}, {args.dtype}, batch {b}, {h} heads, d={d}", fontsize=8)
        ax.legend(fontsize=8)
    table.figures["attention_tflops"] = fig
    return table
