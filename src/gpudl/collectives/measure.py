"""Measuring collectives and data-parallel steps across ranks (workers of ``launch``).

A collective needs every rank, so every rank must call it the same number of times: the
timings here use ``gpudl.timing.time_cpu`` with a fixed number of runs (``min_runs ==
max_runs``), never an adaptive one that could stop one rank before another. On a GPU each
timed run ends with ``torch.cuda.synchronize()`` and repeats the operation ``inner`` times
(chosen from the message size alone, so the same on every rank), so that the host's
synchronisation costs little beside the work. A collective is as fast as its slowest rank:
``slowest`` takes, per entry, the largest of the ranks' medians.

- ``all_reduce_times(rank, k, sizes, impl)``: seconds per all-reduce of each size, by
  ``dist.all_reduce`` ("torch") or any all-reduce ``impl(tensor)`` given (a hand-written ring);
- ``ddp_step_times(rank, k, widths, batch, modes)``: seconds per training step of an MLP, by
  "ddp" (DistributedDataParallel: bucket all-reduces overlap backward), "no_overlap" (every
  gradient all-reduced after backward, one ``dist.all_reduce`` per tensor) and "compute" (no
  communication);
- ``slowest(per_rank)``: the ranks' results combined.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.distributed as dist

from ..bench import allow_tf32
from ..timing import time_cpu
from .launch import worker_device


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _inner(n_bytes: int, device: torch.device) -> int:
    """Repetitions per timed run: enough that small messages take well over the sync's ~10 us."""
    if device.type != "cuda":
        return 1
    return max(1, min(200, (64 << 20) // max(n_bytes, 1)))


def all_reduce_times(rank: int, k: int, sizes: Sequence[int], impl: str | Callable = "torch", runs: int = 5,
                     warmup: int = 2, dtype: torch.dtype = torch.float32) -> list[float]:
    """This rank's median seconds per all-reduce of each of ``sizes`` bytes: ``dist.all_reduce``
    ("torch") or ``impl(tensor)``, an all-reduce in place on every rank."""
    if impl != "torch" and not callable(impl):
        raise ValueError(f"impl must be 'torch' or an all-reduce function, got {impl!r}")
    device = worker_device()
    out = []
    for n_bytes in sizes:
        x = torch.ones(max(1, n_bytes // torch.tensor([], dtype=dtype).element_size()), dtype=dtype, device=device)
        inner = _inner(n_bytes, device)
        op = dist.all_reduce if impl == "torch" else impl

        def run() -> None:
            for _ in range(inner):
                op(x)
            _sync(device)

        dist.barrier()
        m = time_cpu(run, warmup=warmup, min_runs=runs, max_runs=runs)
        out.append(m.median / inner)
    return out


def _mlp(widths: Sequence[int], device: torch.device) -> torch.nn.Sequential:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(torch.nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers).to(device)


def ddp_step_times(rank: int, k: int, widths: Sequence[int], batch: int, modes: Sequence[str] = ("ddp",),
                   runs: int = 10, warmup: int = 3, bucket_mb: float = 25.0) -> dict[str, float]:
    """This rank's median seconds per SGD step of an MLP on ``batch`` examples per rank, for each
    mode: "ddp", "no_overlap" (each gradient all-reduced and averaged after backward) or "compute"."""
    device = worker_device()
    x = torch.randn(batch, widths[0], device=device)
    y = torch.randn(batch, widths[-1], device=device)
    out = {}
    with allow_tf32(True):
        for mode in modes:
            model = _mlp(widths, device)
            opt = torch.optim.SGD(model.parameters(), lr=1e-3)
            after = False
            if mode == "ddp":
                kwargs = {"device_ids": [device.index]} if device.type == "cuda" else {}
                net: torch.nn.Module = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mb,
                                                                                 **kwargs)
            elif mode == "no_overlap":
                net, after = model, True
            elif mode == "compute":
                net = model
            else:
                raise ValueError(f"unknown mode {mode!r}")

            def step() -> None:
                opt.zero_grad(set_to_none=True)
                torch.nn.functional.mse_loss(net(x), y).backward()
                if after:                       # nothing moves during backward: all of it waits here
                    for p in model.parameters():
                        dist.all_reduce(p.grad)
                        p.grad /= k
                opt.step()
                _sync(device)

            dist.barrier()
            out[mode] = time_cpu(step, warmup=warmup, min_runs=runs, max_runs=runs).median
    return out


def slowest(per_rank: list) -> list | dict:
    """Per entry, the largest of the ranks' values (lists or dicts of seconds)."""
    if isinstance(per_rank[0], dict):
        return {key: max(r[key] for r in per_rank) for key in per_rank[0]}
    return [max(values) for values in zip(*per_rank)]


__all__ = ["all_reduce_times", "ddp_step_times", "slowest"]
