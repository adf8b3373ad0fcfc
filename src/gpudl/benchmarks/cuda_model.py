"""The CUDA model against a GPU: the wave staircase, copy bandwidth vs stride, the driver's occupancy.

On a GPU, three measurements of what lecture 04 says:

- **staircase**: a kernel whose every block does the same fixed, latency-bound work (a
  dependent chain of FMAs, one warp per block, 48 KB of dynamic shared memory so an SM holds
  only a few blocks) timed against grid size. Each wave takes the same time whether full or
  not, so the time climbs in steps at multiples of one wave, ``blocks_per_sm x SMs`` blocks
  with the driver's blocks per SM (``cuOccupancyMaxActiveBlocksPerMultiprocessor``); the table
  gives time / (time of one wave) beside the waves the grid needs, ``ceil(grid / wave)``;
- **stride**: ``dst[i] = src[i * stride]`` copies n FP32 values; its useful bandwidth falls
  with the stride as the sector model says (a warp moves the 32-byte sectors its lanes'
  values lie in to use 128 bytes), the measured share of the stride-1 bandwidth beside the
  model's;
- **occupancy**: for kernels compiled to several register counts (``max_registers``), block
  sizes and dynamic shared memory, the driver's blocks per SM, with the registers and shared
  memory the compiler reports: what lab 04's occupancy exercise computes from them.

``--quick`` (a CPU, a few seconds) measures nothing: it prints the model's side of the
staircase and the stride tables for ``--spec`` (default H100-SXM), so the rows the GPU run
fills are visible. The staircase kernel is built so that shared memory is what limits it (one
warp and few registers per block): without a GPU to ask, its blocks per SM are the SM's
shared memory over the 48 KB and the driver's reserve of each block.
"""
from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from ..cuda_model import memory
from ..hardware import GPUSpec, detect, device, get_spec, sm_limits
from ..table import Table

STAIR_THREADS = 32               # one warp per block: four blocks per SM keep each scheduler busy with one
                                  # dependent chain, so co-resident blocks do not slow each other
STAIR_SHARED = 48 * 1024          # dynamic shared memory per block: few blocks per SM, latency-bound
STRIDES = (1, 2, 4, 8, 16, 32)
SWEEP_THREADS = (64, 96, 128, 192, 256, 384, 512, 768, 1024)
SWEEP_REGISTERS = (24, 32, 40, 64, 96, 128, 168, 255)
SWEEP_SHARED = (0, 1000, 6000, 20_000, 40_000)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spec", default="H100-SXM", help="GPU the --quick tables model (default H100-SXM)")
    parser.add_argument("--iterations", type=int, default=20_000, help="FMAs per thread in the staircase kernel")
    parser.add_argument("--max-waves", type=float, default=4.0, help="largest staircase grid, in waves")
    parser.add_argument("--n", type=int, default=1 << 24, help="elements the strided copy writes")
    parser.add_argument("--what", default="staircase,stride,occupancy", help="which parts to run")


# --- the model's side -----------------------------------------------------------------------------

def stair_blocks_per_sm(spec: GPUSpec | str) -> int:
    """Blocks of the staircase kernel one SM holds by its shared memory: the largest carve-out
    over each block's 48 KB plus the driver's reserve (both whole allocation units). The
    kernel's other resources (one warp, a few registers) allow more."""
    lim = sm_limits(spec)
    return lim.shared_memory_per_sm // (STAIR_SHARED + lim.reserved_shared_memory_per_block)


def stair_grids(slots: int, max_waves: float) -> list[int]:
    """Grid sizes from an eighth of a wave to ``max_waves`` waves, in eighths, plus each step's edges."""
    grids = {max(1, round(slots * k / 8)) for k in range(1, int(max_waves * 8) + 1)}
    for k in range(1, int(max_waves) + 1):
        grids |= {k * slots, k * slots + 1}
    return sorted(g for g in grids if g <= max_waves * slots + 1)


def stair_rows(slots: int, max_waves: float) -> list[dict[str, Any]]:
    """The staircase the model predicts: for each grid, the waves it needs at ``slots`` blocks a wave."""
    return [{"part": "staircase", "grid": g, "waves": round(g / slots, 3), "wave_count": math.ceil(g / slots)}
            for g in stair_grids(slots, max_waves)]


def stride_model(stride: int, element_bytes: int = 4) -> float:
    """Share of the stride-1 copy bandwidth the sector model predicts: useful bytes (read
    and written) over moved bytes (the read's sectors, the coalesced write)."""
    lanes = memory.strided_addresses(stride, element_bytes)
    moved = len({a // memory.SECTOR_BYTES for a in lanes}) * memory.SECTOR_BYTES + memory.WARP_SIZE * element_bytes
    return (2 * memory.WARP_SIZE * element_bytes) / moved


def stride_rows() -> list[dict[str, Any]]:
    """The sector model's side of the stride table."""
    return [{"part": "stride", "stride": s,
             "sectors per warp": len({a // memory.SECTOR_BYTES for a in memory.strided_addresses(s)}),
             "model / stride 1": stride_model(s)} for s in STRIDES]


# --- the GPU's side -------------------------------------------------------------------------------

def staircase(iterations: int = 20_000, max_waves: float = 4.0) -> tuple[list[dict[str, Any]], int]:
    """Time the busy kernel against grid size; rows and the slots of one wave (driver's occupancy)."""
    import torch
    from numba import cuda

    from ..cuda_model.device import driver_occupancy
    from ..cuda_model.kernels import busy_kernel
    from ..timing import time_cuda

    spec = detect()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = cuda.as_cuda_array(torch.empty(int(max_waves * 64 * sms + 1) * STAIR_THREADS, device="cuda"))
    busy_kernel[1, STAIR_THREADS, 0, STAIR_SHARED](out, 1)
    cuda.synchronize()
    per_sm = driver_occupancy(busy_kernel, STAIR_THREADS, STAIR_SHARED)
    bound = stair_blocks_per_sm(spec)
    slots = per_sm * sms
    rows = []
    for row in stair_rows(slots, max_waves):
        grid = row["grid"]
        m = time_cuda(lambda g=grid: busy_kernel[g, STAIR_THREADS, 0, STAIR_SHARED](out, iterations),
                      flush_l2=False, budget_s=0.3, min_runs=5)
        rows.append({**row, "time_us": m.median * 1e6, "blocks/SM driver": per_sm, "blocks/SM by shared memory": bound})
    one_wave = np.median([r["time_us"] for r in rows if r["wave_count"] == 1])
    for r in rows:
        r["time / one wave"] = r["time_us"] / one_wave
    return rows, slots


def stride_bandwidth(n: int = 1 << 24) -> list[dict[str, Any]]:
    """Useful GB/s of dst[i] = src[i * stride] against the sector model."""
    import torch
    from numba import cuda

    from ..cuda_model.kernels import copy_kernel
    from ..timing import time_cuda

    rows = []
    model = {r["stride"]: r for r in stride_rows()}
    dst = cuda.as_cuda_array(torch.empty(n, device="cuda"))
    base = None
    for stride in STRIDES:
        src = cuda.as_cuda_array(torch.rand((n - 1) * stride + 1, device="cuda"))
        launch = lambda s=src, st=stride: copy_kernel[(n + 255) // 256, 256](s, dst, st)  # noqa: E731
        m = time_cuda(launch, budget_s=0.5)
        gbs = 8 * n / m.median / 1e9
        base = base or gbs
        rows.append({"part": "stride", "stride": stride, "sectors per warp": model[stride]["sectors per warp"],
                     "useful GB/s": gbs, "measured / stride 1": gbs / base,
                     "model / stride 1": model[stride]["model / stride 1"]})
        del src
    return rows


def _pressure_kernel(max_registers: int):
    """A kernel with 48 live accumulators, compiled with at most ``max_registers`` registers,
    that declares dynamic shared memory."""
    from numba import cuda

    names = [f"a{j}" for j in range(48)]
    src = ["def pressure(out, x, iters):", "    i = cuda.grid(1)", "    dyn = cuda.shared.array(0, float32)",
           "    v = x[i % x.shape[0]]"]
    src += [f"    {a} = v * {j + 1}.0" for j, a in enumerate(names)]
    src += ["    for _ in range(iters):"] + [f"        {a} = {a} * v + {j}.5" for j, a in enumerate(names)]
    src += ["    dyn[0] = v", f"    out[i % out.shape[0]] = {' + '.join(names)}"]
    namespace: dict[str, Any] = {"cuda": cuda, "float32": __import__("numba").float32}
    exec("\n".join(src), namespace)  # noqa: S102 - a generated kernel of our own
    return cuda.jit(max_registers=max_registers)(namespace["pressure"])


def occupancy_sweep() -> list[dict[str, Any]]:
    """The driver's blocks per SM over register caps, block sizes and dynamic shared memory, with
    the registers and static shared memory the compiler reports for each kernel."""
    import torch
    from numba import cuda

    from ..cuda_model.device import driver_occupancy, kernel_resources

    x = cuda.as_cuda_array(torch.rand(1024, device="cuda"))
    out = cuda.as_cuda_array(torch.empty(1024, device="cuda"))
    rows = []
    for cap in SWEEP_REGISTERS:
        kernel = _pressure_kernel(cap)
        kernel[1, 32, 0, 4](out, x, 1)
        cuda.synchronize()
        res = kernel_resources(kernel)
        for threads in SWEEP_THREADS:
            for shared in SWEEP_SHARED:
                try:
                    driver: Any = driver_occupancy(kernel, threads, shared)
                except Exception as exc:  # noqa: BLE001 - a launch the driver refuses
                    driver = f"refused ({type(exc).__name__})"
                rows.append({"part": "occupancy", "max_registers": cap, "registers": res["registers"],
                             "threads": threads, "static shared": res["shared_bytes"], "dynamic shared": shared,
                             "driver": driver})
    return rows


# --- figures and the benchmark --------------------------------------------------------------------

def staircase_figure(rows: list[dict[str, Any]], slots: int, title: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    grids = np.array([r["grid"] for r in rows])
    if "time / one wave" in rows[0]:
        ax.plot(grids, [r["time / one wave"] for r in rows], "o", ms=4, label="measured time / one wave")
    ax.step(grids, [r["wave_count"] for r in rows], where="post", color="C1", label="waves (ceil(grid / wave))")
    for k in range(1, int(grids.max() // slots) + 1):
        ax.axvline(k * slots, color="0.85", lw=0.8, zorder=0)
    ax.set_xlabel("grid size (blocks)")
    ax.set_ylabel("time, in waves")
    ax.set_title(title)
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig


def stride_figure(rows: list[dict[str, Any]], title: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    strides = [r["stride"] for r in rows]
    ax.plot(strides, [stride_model(s) for s in strides], "s-", color="C1", label="sector model")
    if "measured / stride 1" in rows[0]:
        ax.plot(strides, [r["measured / stride 1"] for r in rows], "o-", color="C0", label="measured")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("stride (FP32 elements between lanes)")
    ax.set_ylabel("useful bandwidth / stride 1")
    ax.set_ylim(0, 1.1)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def run(args: argparse.Namespace) -> Table:
    parts = {p.strip() for p in args.what.split(",")}
    gpu = device() == "cuda" and not args.quick
    table = Table(title="CUDA model: waves, coalescing, occupancy" + (" (measured)" if gpu else " (model only)"))
    if not gpu:
        spec = get_spec(args.spec)
        lim = sm_limits(spec)
        per_sm = stair_blocks_per_sm(spec)
        slots = per_sm * spec.sms
        stairs = stair_rows(slots, args.max_waves)
        table.rows.extend(stairs[:: max(1, len(stairs) // 12)])
        strides = stride_rows()
        table.rows.extend(strides)
        table.figures["cuda_model_staircase"] = staircase_figure(stairs, slots, f"{spec.name}: the model's waves")
        table.figures["cuda_model_stride"] = stride_figure(strides, f"{spec.name}: the sector model")
        table.notes.append(f"model only (no GPU or --quick): {spec.name}, {spec.sms} SMs, {lim.max_warps_per_sm} "
                           f"warps per SM; the staircase kernel's 48 KB of shared memory leave room for {per_sm} "
                           f"blocks per SM, a wave is {slots} blocks")
        return table
    name = detect().name
    if "staircase" in parts:
        rows, slots = staircase(args.iterations, args.max_waves)
        table.rows.extend(rows)
        table.figures["cuda_model_staircase"] = staircase_figure(rows, slots, f"{name}: time against grid size")
        off = [r for r in rows if abs(r["time / one wave"] - r["wave_count"]) > 0.15 * r["wave_count"]]
        table.notes.append(f"staircase: a wave is {slots} blocks; {len(rows) - len(off)} of {len(rows)} grids take "
                           "their predicted number of waves within 15%")
    if "stride" in parts:
        rows = stride_bandwidth(args.n)
        table.rows.extend(rows)
        table.figures["cuda_model_stride"] = stride_figure(rows, f"{name}: strided copy")
    if "occupancy" in parts:
        rows = occupancy_sweep()
        table.rows.extend(rows)
        table.notes.append(f"occupancy: the driver's blocks per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor) for "
                           f"{len(rows)} configurations of {len(SWEEP_REGISTERS)} kernels")
    return table


__all__ = ["add_arguments", "run", "stair_blocks_per_sm", "stair_grids", "stair_rows", "stride_model", "stride_rows",
           "staircase", "stride_bandwidth", "occupancy_sweep", "staircase_figure", "stride_figure"]
