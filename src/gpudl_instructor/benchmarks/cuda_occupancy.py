"""Lab 04's occupancy model against the lecture's Nsight Compute table and the driver.

The course edition's ``gpudl bench cuda_model`` measures the GPU (the wave staircase, strided
copies, the driver's blocks per SM); the model that predicts blocks per SM is lab 04's exercise
and lives with the references (``gpudl_instructor.references.lab04.occupancy``). This benchmark
puts the two side by side:

- **lecture**: the Nsight Compute table of the lecture (128 threads, 17 registers, 20 bytes of
  shared memory on an 80-SM Volta), recomputed: limits 32, 21, 16, 384, 16 blocks per SM, and
  4,132 blocks = 3.23 waves;
- **staircase**: the model's blocks per SM for the staircase kernel of ``gpudl bench cuda_model``
  beside the shared-memory bound that benchmark uses without a GPU;
- **occupancy** (a GPU): the driver's ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` for the
  course benchmark's sweep of kernels, beside the model fed the registers and shared memory the
  compiler reports, and whether they agree.

``--quick`` (a CPU) runs the first two.
"""
from __future__ import annotations

import argparse
from typing import Any

from gpudl.benchmarks import cuda_model as course
from gpudl.hardware import SPECS, detect, device, get_spec
from gpudl.table import Table

from ..references.lab04 import occupancy, waves


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--specs", default="V100,T4,A100,RTX3090,H100-SXM",
                        help="GPUs whose staircase kernel the model and the shared-memory bound are compared on")


def lecture_rows() -> list[dict[str, Any]]:
    """The lecture's Nsight Compute table, recomputed: 128 threads, 17 registers, 20 bytes, 80-SM Volta."""
    o = occupancy("V100", 128, 17, 20)
    w = waves(4132, o.blocks_per_sm, get_spec("V100").sms)
    return [{"part": "lecture", "limit": name, "blocks per SM": int(v)} for name, v in o.limits.items()] + [
        {"part": "lecture", "limit": f"occupancy ({o.limiter})", "blocks per SM": o.blocks_per_sm},
        {"part": "lecture", "limit": "waves of 4,132 blocks on 80 SMs", "blocks per SM": round(w.waves, 2)}]


def staircase_rows(specs: list[str]) -> list[dict[str, Any]]:
    """The staircase kernel (one warp, 32 registers, 48 KB of dynamic shared memory): the model's
    blocks per SM beside the course benchmark's shared-memory bound."""
    rows = []
    for name in specs:
        model = occupancy(name, course.STAIR_THREADS, 32, course.STAIR_SHARED)
        bound = course.stair_blocks_per_sm(name)
        rows.append({"part": "staircase", "gpu": name, "model": model.blocks_per_sm, "limiter": model.limiter,
                     "shared-memory bound": bound, "agree": model.blocks_per_sm == bound})
    return rows


def driver_rows() -> list[dict[str, Any]]:
    """The course benchmark's sweep of the driver's occupancy, each row beside the model."""
    spec = detect()
    rows = []
    for r in course.occupancy_sweep():
        model = occupancy(spec, r["threads"], r["registers"], r["static shared"] + r["dynamic shared"])
        agree = (r["driver"] == model.blocks_per_sm) if isinstance(r["driver"], int) else model.blocks_per_sm == 0
        rows.append({**r, "gpudl": model.blocks_per_sm, "limiter": model.limiter, "agree": agree})
    return rows


def run(args: argparse.Namespace) -> Table:
    specs = [s.strip() for s in args.specs.split(",") if s.strip() in SPECS]
    gpu = device() == "cuda" and not args.quick
    table = Table(title="Lab 04's occupancy model" + (" against the driver" if gpu else ""))
    table.rows.extend(lecture_rows())
    stairs = staircase_rows(specs)
    table.rows.extend(stairs)
    table.notes.append(f"staircase kernel: the model and the shared-memory bound agree on "
                       f"{sum(r['agree'] for r in stairs)} of {len(stairs)} GPUs")
    if gpu:
        rows = driver_rows()
        table.rows.extend(rows)
        table.notes.append(f"occupancy: the model agrees with cuOccupancyMaxActiveBlocksPerMultiprocessor on "
                           f"{sum(r['agree'] for r in rows)} of {len(rows)} configurations")
    return table


__all__ = ["add_arguments", "run", "lecture_rows", "staircase_rows", "driver_rows"]
