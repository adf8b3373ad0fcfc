"""find_algorithms next to torch's conv2d (cuDNN on a GPU, oneDNN on a CPU).

One convolution (default on a GPU: the lecture's N=1 C=K=128 128x128 3x3; on a CPU: N=8 C=K=64
56x56 3x3), FP32: every algorithm of ``find_algorithms`` against torch's conv2d (on a GPU, cuDNN
with TF32 off and on), rounds alternating so that a burst of other work spoils one round, not
the comparison; on a GPU with the lecture's GV100 figures beside.

The algorithms measured are lab 05's references (``gpudl_instructor.references.lab05``), so the
benchmark is the instructor's; lecture 05 keeps its results as recorded measurements.
"""
from __future__ import annotations

import argparse
import math

import torch

from gpudl.conv import LECTURE_GV100_3X3, Algo, AlgoPerf, ConvolutionDescriptor, FilterDescriptor, TensorDescriptor
from gpudl.table import Table
from gpudl.timing import Measurement, measure

from ..references.lab05 import conv_flops, find_algorithms


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cuda = torch.cuda.is_available()
    parser.add_argument("--n", type=int, default=1 if cuda else 8)
    parser.add_argument("--c", type=int, default=128 if cuda else 64)
    parser.add_argument("--hw", type=int, default=128 if cuda else 56)
    parser.add_argument("--k", type=int, default=128 if cuda else 64)
    parser.add_argument("--r", type=int, default=3)
    parser.add_argument("--layout", choices=["NCHW", "NHWC"], default="NCHW")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for torch (a shared machine gives steadier ratios with 1)")


def run(args: argparse.Namespace) -> Table:
    cuda = torch.cuda.is_available()
    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        return _run(args, cuda)
    finally:
        torch.set_num_threads(threads)


def _run(args: argparse.Namespace, cuda: bool) -> Table:
    device = "cuda" if cuda else "cpu"
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(args.n, args.c, args.hw, args.hw, generator=gen).to(device)
    w = torch.randn(args.k, args.c, args.r, args.r, generator=gen).to(device)
    if args.layout == "NHWC":
        x = x.contiguous(memory_format=torch.channels_last)
    cd = ConvolutionDescriptor(pad=args.r // 2)                    # DEFAULT_MATH: our GEMMs in true FP32
    flops = conv_flops(TensorDescriptor.from_tensor(x), FilterDescriptor(w.dtype, "NCHW", *w.shape), cd)
    timing = {"budget_s": 0.3 if args.quick else 1.0, "min_runs": 3 if args.quick else 5}
    # torch's convolution: on a GPU cuDNN twice, with TF32 tensor cores forbidden (true FP32, what our
    # algorithms compute) and allowed (PyTorch's default for convolutions on Ampere and later).
    libraries = {"cuDNN FP32 (torch)": False, "cuDNN TF32 (torch)": True} if cuda else {"torch CPU conv2d": False}
    baseline = next(iter(libraries))
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)
    lib_best: dict[str, Measurement] = {}
    best: dict[Algo, AlgoPerf] = {}
    try:
        torch.backends.cudnn.benchmark = True                      # cuDNN's own find, in its warm-up
        # Rounds alternate torch and find, and each keeps its best median: on a shared machine a
        # burst of someone else's work then spoils one round, not the comparison.
        for _ in range(2 if args.quick else 3):
            for name, tf32 in libraries.items():
                torch.backends.cudnn.allow_tf32 = tf32
                m = measure(lambda: torch.nn.functional.conv2d(x, w, padding=args.r // 2), device=device,
                                  what=name, **timing)
                if name not in lib_best or m.median < lib_best[name].median:
                    lib_best[name] = m
            for perf in find_algorithms(x, w, cd, **timing):
                if perf.algo not in best or perf.time < best[perf.algo].time:
                    best[perf.algo] = perf
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark = saved
    base = lib_best[baseline].median
    title = (f"convolution N={args.n} C={args.c} {args.hw}x{args.hw} K={args.k} {args.r}x{args.r} pad {args.r // 2}, "
             f"FP32 {args.layout} on {device}" + ("" if cuda else f" ({torch.get_num_threads()} threads)"))
    table = Table(title)
    for perf in sorted(best.values(), key=lambda perf: perf.time):
        ran = math.isfinite(perf.time)
        row = {"algorithm": perf.algo.value, "status": perf.status.value,
               "median ms": perf.time_ms if ran else None, "workspace MiB": perf.memory / 2**20,
               "GFLOP/s": flops / perf.time / 1e9 if ran else None,
               f"x {baseline}": perf.time / base if ran else None}
        lecture = LECTURE_GV100_3X3.get(perf.algo.value)
        if cuda and lecture and args.r == 3:
            row["lecture GV100 ms"], row["lecture GV100 MB"] = lecture
        table.rows.append(row)
    for name, m in lib_best.items():
        table.rows.append({"algorithm": name, "status": "SUCCESS", "median ms": m.median * 1e3,
                           "workspace MiB": None, "GFLOP/s": flops / m.median / 1e9, f"x {baseline}": m.median / base})
    table.notes.append(f"times: the best of the rounds' medians ({'CUDA events, L2 flushed' if cuda else 'perf_counter'}); "
                       "our algorithms run with DEFAULT_MATH (matmul TF32 off: true FP32)")
    ours = [p.algo.value for p in sorted(best.values(), key=lambda perf: perf.time) if math.isfinite(p.time)]
    if cuda and args.r == 3:
        lecture = [name for name, _ in sorted(LECTURE_GV100_3X3.items(), key=lambda kv: kv[1][0]) if name in ours]
        table.notes.append(f"find's order here: {' < '.join(ours)}; the lecture's GV100 order of the same algorithms: "
                           f"{' < '.join(lecture)} ({'the same' if ours == lecture else 'different'})")
    if cuda:
        table.notes.append("lecture columns: the lecture's Quadro GV100 table (read as N=1, C=K=128, 128x128: then its GEMM "
                           "workspace of 72 MB is exactly one lowered image). cuDNN's own workspace is not visible "
                           "through torch")
    else:
        table.notes.append("on a CPU the GPU rows (cuDNN FP32/TF32, the lecture's GV100 figures) are absent; acceptance: "
                           "GEMM (im2col) within 2x of torch's CPU conv2d")
    return table
