"""First calls in a fresh process: import torch, the CUDA context, cuBLAS's and cuDNN's first call, the second.

Lecture 02 says that the first call of almost anything is slower than the next ones. This
benchmark measures by how much, in new Python processes, one after the other, each of which runs
the same steps once, in order:

- ``import torch``;
- on a GPU, the CUDA context: the first tensor on the device, synchronised;
- the first ``torch.matmul`` of two n x n matrices (4096 and BF16 on a GPU; 1024, or 256 with
  ``--quick``, and FP32 on a CPU): on a GPU the cuBLAS handle, its workspace, the kernel's code
  loaded and the kernel chosen for the shape; then the same matmul again;
- the first ``torch.nn.functional.conv2d`` (ResNet's 3x3 layer, 64 channels, 56 x 56; batch 32
  and FP16 on a GPU, batch 8 or 2 with ``--quick`` on a CPU): on a GPU the cuDNN handle and its
  choice of algorithm; then again.

Each step is one synchronised call timed on the host (``gpudl.timing.time_cpu``, one run, no
warm-up: the first call is the point), except ``import torch``, which runs before anything could
time it and is timed with ``time.perf_counter``. The table gives each step's median, minimum and
maximum over the processes (``--processes``), in ms.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from ..table import Table

_MARK = "gpudl-startup:"
# The program each new process runs (python -c, with the device, n and the batch as arguments). It is
# text, not a function of this module, so that nothing here spawns a process when called by mistake
# (the hand-out's answer hunt calls every function of the course edition).
_CHILD = """
import json, sys, time
t0 = time.perf_counter()
import torch
steps = {"import torch": time.perf_counter() - t0}
from gpudl.timing import time_cpu

device, n, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cuda = device == "cuda"
sync = torch.cuda.synchronize if cuda else (lambda: None)


def once(fn):
    def call():
        fn()
        sync()
    return time_cpu(call, warmup=0, min_runs=1, max_runs=1).times[0]


if cuda:
    steps["CUDA context (first tensor on the GPU)"] = once(lambda: torch.empty(1, device="cuda"))
g = torch.Generator(device=device).manual_seed(0)
a, b = (torch.randn(n, n, device=device, generator=g).to(torch.bfloat16 if cuda else torch.float32) for _ in "ab")
x = torch.randn(batch, 64, 56, 56, device=device, generator=g).to(torch.float16 if cuda else torch.float32)
w = torch.randn(64, 64, 3, 3, device=device, generator=g).to(x.dtype)
sync()
steps[f"first matmul {n}^3"] = once(lambda: torch.matmul(a, b))
steps[f"second matmul {n}^3"] = once(lambda: torch.matmul(a, b))
steps["first conv2d 3x3, 64 ch, 56 x 56"] = once(lambda: torch.nn.functional.conv2d(x, w, padding=1))
steps["second conv2d"] = once(lambda: torch.nn.functional.conv2d(x, w, padding=1))
print(MARK + json.dumps(steps), flush=True)
""".replace("MARK", repr(_MARK))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--processes", type=int, default=None, help="fresh processes (default: 5, 2 with --quick)")
    p.add_argument("-n", type=int, default=None, help="the matmul's size (default: 4096 on a GPU, 1024 on a CPU)")


def run(args: argparse.Namespace) -> Table:
    from .. import hardware

    device = hardware.device()
    cuda = device == "cuda"
    processes = args.processes if args.processes is not None else (2 if args.quick else 5)
    if processes < 1:
        raise ValueError(f"--processes must be at least 1, got {processes}")
    n = args.n or (4096 if cuda else 256 if args.quick else 1024)
    batch = 32 if cuda else 2 if args.quick else 8
    runs = []
    for _ in range(processes):
        done = subprocess.run([sys.executable, "-c", _CHILD, device, str(n), str(batch)], capture_output=True,
                              text=True, timeout=600)
        lines = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"a fresh process failed (exit status {done.returncode}): "
                               f"{(done.stderr or done.stdout).strip()[-800:]}")
        runs.append(json.loads(lines[-1][len(_MARK):]))
    table = Table(f"first calls in a fresh process on {'the GPU' if cuda else 'the CPU'} ({processes} of them)")
    for step in runs[0]:
        ms = [r[step] * 1e3 for r in runs]
        table.rows.append({"step": step, "median ms": statistics.median(ms), "min ms": min(ms), "max ms": max(ms)})
    spec = hardware.detect() if cuda else None
    table.notes.append(f"{spec.name if spec else ('CPU' if not cuda else 'unknown GPU')}: each step timed once in "
                       f"each of {processes} new Python process(es), in the order shown, synchronised; matmul "
                       f"{'BF16' if cuda else 'FP32'}, conv2d {'FP16' if cuda else 'FP32'} (batch {batch}). The second "
                       "call of each is what every later call costs; the difference is the one-off work.")
    return table

