"""Collectives on several processes: what they cost, the ring's tools, data-parallel training,
and a launcher for notebooks, tests and the grader.

The engine is ``torch.distributed`` itself: gloo with several processes on a CPU, NCCL with one
process per GPU. The ring collectives written by hand, their cost models, gradient bucketing and
the data-parallel step are lab 10's exercises, not tools of this package. Modules, in reading
order:

``cost``           the lecture's example, the pipelined ring broadcast's schedule, trees,
                   nccl-tests' algbw, NVLink figures, the ImageNet/ResNet-50 scaling table
``ring``           the ring's neighbours, chunks cut as ``torch.tensor_split`` cuts them, and
                   ``traffic()``, which counts what the process group really sent
``data_parallel``  a small MLP and its data, each rank's share, one process on the whole batch
                   and DDP (``torch.nn.parallel.DistributedDataParallel``) on k
``launch``         ``launch(fn, k, ...)``: k workers, a free port, time limits, errors by rank
``worker``         what runs in a worker process, and the zygote that forks them
``measure``        timing collectives and training steps across ranks (the same calls on every rank)
"""
import importlib

from .cost import (COLLECTIVES, LECTURE_EXAMPLE, NVLINK_BANDWIDTH, SCALING_TABLE, ScalingRun, algorithm_bandwidth,
                   gpu_hours, images_per_second, nvlink_bandwidth, ring_broadcast_schedule, scaling_rows,
                   tree_all_reduce_time)
from .launch import LaunchError, WorkerError, WorkerTimeout, default_backend, launch, shutdown, worker_device

# ``data_parallel``'s and ``ring``'s names import torch: they are imported when first asked for (PEP 562),
# so a check that only reads ``cost`` (lab 01 forbids ``cost.algorithm_bandwidth``) leaves torch unimported,
# about 1.5 s of every graded lab 01 kernel.
_LAZY = {**dict.fromkeys(("TrainConfig", "flat_params", "make_batch", "make_model", "shard", "train_ddp",
                          "train_single"), "data_parallel"),
         **dict.fromkeys(("Traffic", "chunk_bounds", "ring_neighbours", "traffic"), "ring")}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "COLLECTIVES", "LECTURE_EXAMPLE", "NVLINK_BANDWIDTH", "SCALING_TABLE", "ScalingRun", "algorithm_bandwidth",
    "gpu_hours", "images_per_second", "nvlink_bandwidth", "ring_broadcast_schedule", "scaling_rows",
    "tree_all_reduce_time",
    "LaunchError", "WorkerError", "WorkerTimeout", "default_backend", "launch", "shutdown", "worker_device",
    *_LAZY,
]
