"""Collectives on several processes: their costs, ring algorithms on ``torch.distributed``
point-to-point, data-parallel training, and a launcher for notebooks, tests and the grader.

The engine is ``torch.distributed`` itself: gloo with several processes on a CPU, NCCL with one
process per GPU. Modules, in reading order:

``cost``           alpha-beta models (the lecture's ring broadcast, unpipelined and in S chunks;
                   reduce-scatter, all-gather, all-reduce; trees), bytes per rank, nccl-tests'
                   algbw/busbw, NVLink figures, the ImageNet/ResNet-50 scaling table
``ring``           ring broadcast (pipelined), reduce-scatter, all-gather, all-reduce written on
                   ``batch_isend_irecv``, each returning the bytes it sent; ``traffic()`` counts
                   what the process group really sent
``data_parallel``  gradient buckets in reverse order, all-reduced as they become ready; DDP;
                   training that equals one process on the whole batch
``launch``         ``launch(fn, k, ...)``: k workers, a free port, time limits, errors by rank
``worker``         what runs in a worker process, and the zygote that forks them
``measure``        timing collectives and training steps across ranks (the same calls on every rank)
"""
from .cost import (COLLECTIVES, LECTURE_EXAMPLE, NVLINK_BANDWIDTH, SCALING_TABLE, ScalingRun, algorithm_bandwidth,
                   bus_bandwidth, bus_bandwidth_factor, bytes_per_rank, gpu_hours, images_per_second, nvlink_bandwidth,
                   optimal_chunks, ring_all_gather_time, ring_all_reduce_time, ring_broadcast_schedule,
                   ring_broadcast_steps, ring_broadcast_time, ring_bytes_sent, ring_reduce_scatter_time,
                   scaling_rows, tree_all_reduce_time)
from .data_parallel import (GradientBuckets, TrainConfig, make_batch, make_model, plan_buckets, sgd_step, shard,
                            train_data_parallel, train_single)
from .launch import LaunchError, WorkerError, WorkerTimeout, default_backend, launch, shutdown, worker_device
from .ring import (Traffic, chunk_bounds, ring_all_gather, ring_all_reduce, ring_broadcast, ring_neighbours,
                   ring_reduce_scatter, traffic)

__all__ = [
    "COLLECTIVES", "LECTURE_EXAMPLE", "NVLINK_BANDWIDTH", "SCALING_TABLE", "ScalingRun", "algorithm_bandwidth",
    "bus_bandwidth", "bus_bandwidth_factor", "bytes_per_rank", "gpu_hours", "images_per_second", "nvlink_bandwidth",
    "optimal_chunks", "ring_all_gather_time", "ring_all_reduce_time", "ring_broadcast_schedule",
    "ring_broadcast_steps", "ring_broadcast_time", "ring_bytes_sent", "ring_reduce_scatter_time", "scaling_rows",
    "tree_all_reduce_time",
    "GradientBuckets", "TrainConfig", "make_batch", "make_model", "plan_buckets", "sgd_step", "shard",
    "train_data_parallel", "train_single",
    "LaunchError", "WorkerError", "WorkerTimeout", "default_backend", "launch", "shutdown", "worker_device",
    "Traffic", "chunk_bounds", "ring_all_gather", "ring_all_reduce", "ring_broadcast", "ring_neighbours",
    "ring_reduce_scatter", "traffic",
]
