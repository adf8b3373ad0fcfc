"""What collectives cost, as the course edition shows it: the lecture's example, the broadcast's
schedule, trees, nccl-tests' algorithm bandwidth, NVLink figures and the scaling table.

The alpha-beta model: sending m bytes over one link takes ``alpha + m / B``: a latency alpha
(launching, synchronising, the first byte's trip) and a bandwidth B per link. A ring of k
GPUs is k links used at once, each one way. Sizes are in bytes, times in seconds, bandwidths
in bytes per second. The ring's own models (the broadcast in S chunks, the all-reduce, the bus
bandwidth factors) are lab 10's exercises: the lecture derives them in prose.

Reading order:

- ``LECTURE_EXAMPLE`` (4 GPUs, 100 MB, 12 GB/s), ``ring_broadcast_schedule`` (who sends which
  chunk in which step of the pipelined ring broadcast);
- ``tree_all_reduce_time`` (a binary tree's reduce and broadcast: latency in log2 k);
- ``algorithm_bandwidth`` (nccl-tests' algbw);
- ``NVLINK_BANDWIDTH``, ``nvlink_bandwidth``, ``PCIE_LECTURE_BANDWIDTH``;
- the ImageNet/ResNet-50 scaling table: ``ScalingRun``, ``SCALING_TABLE``,
  ``images_per_second``, ``gpu_hours``, ``scaling_rows``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

COLLECTIVES = ("broadcast", "reduce", "reduce_scatter", "all_gather", "all_reduce")

# The lecture's 4-GPU PCIe tree, seen as a unidirectional ring: 4 GPUs, ~12 GB/s links,
# and a 100 MB message (our example size).
PCIE_LECTURE_BANDWIDTH = 12e9
LECTURE_EXAMPLE = MappingProxyType({"k": 4, "n_bytes": 100e6, "bandwidth": PCIE_LECTURE_BANDWIDTH})


# --- the ring broadcast's schedule ------------------------------------------------------------------

def ring_broadcast_schedule(k: int, chunks: int = 1, src: int = 0) -> list[tuple[int, int, int, int]]:
    """Every transfer of the lecture's pipelined ring broadcast as (step, sender, receiver, chunk):
    the rank p places after ``src`` sends chunk c in step p + c (the lecture's figure)."""
    if k < 1 or chunks < 1:
        raise ValueError(f"need k >= 1 and chunks >= 1, got k={k}, chunks={chunks}")
    moves = [(p + c, p, c) for p in range(k - 1) for c in range(chunks)]
    return [(step, (src + p) % k, (src + p + 1) % k, c) for step, p, c in sorted(moves)]


# --- trees ---------------------------------------------------------------------------------------

def tree_all_reduce_time(n_bytes: float, k: int, bandwidth: float, latency: float = 0.0, chunks: int = 1) -> float:
    """A reduce up a binary tree, then a broadcast down it, each pipelined in ``chunks``
    pieces: 2 (d + S - 1) (alpha + N / (S B)) with depth d = ceil(log2 k). Its latency grows
    with log2 k instead of k, which is why NCCL uses trees for small messages at scale; for
    large ones the ring's 2 (k - 1) / k N / B beats the tree's 2 N / B."""
    if n_bytes < 0 or not isinstance(k, int) or k < 1 or bandwidth <= 0 or latency < 0:
        raise ValueError(f"need n_bytes >= 0, an int k >= 1, bandwidth > 0 and latency >= 0; got "
                         f"{n_bytes}, {k!r}, {bandwidth}, {latency}")
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    if k == 1:
        return 0.0
    depth = math.ceil(math.log2(k))
    return 2 * (depth + chunks - 1) * (latency + n_bytes / (chunks * bandwidth))


# --- nccl-tests' algorithm bandwidth ---------------------------------------------------------------

def algorithm_bandwidth(n_bytes: float, seconds: float) -> float:
    """nccl-tests' algbw: the message size over the time, bytes/s. (Its busbw multiplies algbw by
    a factor per collective: lab 10's exercise.)"""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    return n_bytes / seconds


# NVLink bandwidth per GPU, both directions together, bytes/s. A100: the lecture's "600 GB/s
# NVLink"; V100 (NVLink 2), H100 and H200 (NVLink 4): NVIDIA's datasheets. One direction is half.
NVLINK_BANDWIDTH = MappingProxyType({"V100": 300e9, "A100": 600e9, "H100": 900e9, "H200": 900e9})


def nvlink_bandwidth(gpu_name: str, *, one_way: bool = True) -> float | None:
    """A GPU's NVLink bandwidth in bytes/s (one direction by default, what a busbw reaches at
    best), from a torch device name such as "NVIDIA H200"; None for a GPU not in the table."""
    for key, bw in NVLINK_BANDWIDTH.items():
        if key in gpu_name.upper():
            return bw / 2 if one_way else bw
    return None


# --- the lecture's ImageNet/ResNet-50 scaling table ----------------------------------------------

IMAGENET_TRAIN_IMAGES = 1_281_167      # ILSVRC 2012 training set
RESNET50_EPOCHS = 90                   # the schedule these runs train for (He et al.'s 90 epochs)


@dataclass(frozen=True)
class ScalingRun:
    """One row of the table: who, batch size, processors, library, wall time, top-1."""

    year: int
    who: str
    batch: str
    processor: str
    count: int | None            # processors used (None: "full TPU Pod")
    library: str
    seconds: float
    accuracy: float

    def __post_init__(self) -> None:
        if self.seconds <= 0 or (self.count is not None and self.count < 1):
            raise ValueError(f"a run needs a positive time and processor count: {self}")


SCALING_TABLE = (
    ScalingRun(2016, "He et al.", "256", "Tesla P100", 8, "Caffe", 29 * 3600, 75.3),
    ScalingRun(2017, "Goyal et al.", "8K", "Tesla P100", 256, "Caffe2", 3600, 76.3),
    ScalingRun(2017, "Smith et al.", "8K→16K", "full TPU Pod", None, "TensorFlow", 30 * 60, 76.1),
    ScalingRun(2017, "Akiba et al.", "32K", "Tesla P100", 1024, "Chainer", 15 * 60, 74.9),
    ScalingRun(2018, "Jia et al.", "64K", "Tesla P40", 2048, "TensorFlow", 6.6 * 60, 75.8),
    ScalingRun(2018, "Mikami et al.", "34K→68K", "Tesla V100", 2176, "NNL", 224, 75.03),
)


def images_per_second(run: ScalingRun, epochs: int = RESNET50_EPOCHS, images: int = IMAGENET_TRAIN_IMAGES) -> float:
    """Training throughput of a run: ``epochs`` passes over ``images`` in its wall time."""
    return epochs * images / run.seconds


def gpu_hours(run: ScalingRun) -> float | None:
    """Processors x hours: what the run cost (None where the table gives no count)."""
    return None if run.count is None else run.count * run.seconds / 3600


def scaling_rows(epochs: int = RESNET50_EPOCHS) -> list[dict]:
    """The table with throughput, per-processor throughput, processor-hours, and the speed-up
    over the first row (8 P100s in 29 hours)."""
    base = SCALING_TABLE[0]
    rows = []
    for run in SCALING_TABLE:
        ips = images_per_second(run, epochs)
        row = {"year": run.year, "who": run.who, "batch": run.batch, "processors": run.count,
               "processor": run.processor, "time_s": run.seconds, "top1": run.accuracy, "images_per_s": ips,
               "images_per_s_per_proc": None if run.count is None else ips / run.count,
               "proc_hours": gpu_hours(run), "speedup": base.seconds / run.seconds}
        rows.append(row)
    return rows


__all__ = ["COLLECTIVES", "PCIE_LECTURE_BANDWIDTH", "LECTURE_EXAMPLE", "ring_broadcast_schedule",
           "tree_all_reduce_time", "algorithm_bandwidth", "NVLINK_BANDWIDTH", "nvlink_bandwidth",
           "IMAGENET_TRAIN_IMAGES", "RESNET50_EPOCHS", "ScalingRun", "SCALING_TABLE", "images_per_second",
           "gpu_hours", "scaling_rows"]
