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
from .cost import (COLLECTIVES, LECTURE_EXAMPLE, NVLINK_BANDWIDTH, SCALING_TABLE, ScalingRun, algorithm_bandwidth,
                   gpu_hours, images_per_second, nvlink_bandwidth, ring_broadcast_schedule, scaling_rows,
                   tree_all_reduce_time)
from .data_parallel import TrainConfig, flat_params, make_batch, make_model, shard, train_ddp, train_single
from .launch import LaunchError, WorkerError, WorkerTimeout, default_backend, launch, shutdown, worker_device
from .ring import Traffic, chunk_bounds, ring_neighbours, traffic

__all__ = [
    "COLLECTIVES", "LECTURE_EXAMPLE", "NVLINK_BANDWIDTH", "SCALING_TABLE", "ScalingRun", "algorithm_bandwidth",
    "gpu_hours", "images_per_second", "nvlink_bandwidth", "ring_broadcast_schedule", "scaling_rows",
    "tree_all_reduce_time",
    "TrainConfig", "flat_params", "make_batch", "make_model", "shard", "train_ddp", "train_single",
    "LaunchError", "WorkerError", "WorkerTimeout", "default_backend", "launch", "shutdown", "worker_device",
    "Traffic", "chunk_bounds", "ring_neighbours", "traffic",
]
