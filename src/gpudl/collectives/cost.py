"""What collectives cost: alpha-beta models, bytes on the wire, and nccl-tests' bandwidths.

The alpha-beta model: sending m bytes over one link takes ``alpha + m / B``: a latency alpha
(launching, synchronising, the first byte's trip) and a bandwidth B per link. A ring of k
GPUs is k links used at once, each one way. Sizes are in bytes, times in seconds, bandwidths
in bytes per second.

The lecture's derivation, the ring broadcast of N bytes from one GPU to k - 1 others:

- unpipelined, the whole message hops k - 1 times: ``(k - 1) N / B``;
- split into S messages, the first arrives at the end of the ring after k - 1 steps and one
  more arrives every step after: S + k - 2 steps of N / (S B), ``N (S + k - 2) / (S B)``,
  which tends to N / B as S grows. With a latency per step the chunks cannot be made
  arbitrarily small: ``optimal_chunks`` balances the two.

Reading order:

- ``LECTURE_EXAMPLE``, ``ring_broadcast_steps``, ``ring_broadcast_time``,
  ``optimal_chunks``, ``ring_broadcast_schedule`` (who sends which chunk in which step);
- ``ring_reduce_scatter_time``, ``ring_all_gather_time``, ``ring_all_reduce_time``,
  ``tree_all_reduce_time``;
- ``bytes_per_rank`` (the formulas: 2 (k - 1) / k N for a ring all-reduce) and
  ``ring_bytes_sent`` (exact per-rank counts of ``gpudl.collectives.ring``, any N);
- nccl-tests' figures: ``algorithm_bandwidth``, ``bus_bandwidth_factor``, ``bus_bandwidth``;
- ``NVLINK_BANDWIDTH``, ``nvlink_bandwidth``, ``PCIE_LECTURE_BANDWIDTH``;
- the ImageNet/ResNet-50 scaling table: ``ScalingRun``, ``SCALING_TABLE``,
  ``images_per_second``, ``gpu_hours``, ``scaling_rows``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

from ..references import reference

COLLECTIVES = ("broadcast", "reduce", "reduce_scatter", "all_gather", "all_reduce")

# The lecture's 4-GPU PCIe tree, seen as a unidirectional ring: 4 GPUs, ~12 GB/s links,
# and a 100 MB message (our example size).
PCIE_LECTURE_BANDWIDTH = 12e9
LECTURE_EXAMPLE = MappingProxyType({"k": 4, "n_bytes": 100e6, "bandwidth": PCIE_LECTURE_BANDWIDTH})


def _check(n_bytes: float, k: int, bandwidth: float, latency: float = 0.0) -> None:
    if n_bytes < 0:
        raise ValueError(f"n_bytes must be >= 0, got {n_bytes}")
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k (the number of GPUs) must be a positive int, got {k!r}")
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be > 0 bytes/s, got {bandwidth}")
    if latency < 0:
        raise ValueError(f"latency must be >= 0 s, got {latency}")


# --- the ring broadcast ---------------------------------------------------------------------------

def ring_broadcast_steps(k: int, chunks: int = 1) -> int:
    """Steps of a ring broadcast in ``chunks`` pieces: S + k - 2 (k - 1 unpipelined)."""
    if k < 1 or chunks < 1:
        raise ValueError(f"need k >= 1 and chunks >= 1, got k={k}, chunks={chunks}")
    return 0 if k == 1 else chunks + k - 2


@reference
def ring_broadcast_time(n_bytes: float, k: int, bandwidth: float, chunks: int = 1, latency: float = 0.0) -> float:
    """Seconds to broadcast ``n_bytes`` to ``k`` GPUs round a ring in ``chunks`` pieces:
    (S + k - 2) (alpha + N / (S B)); with S = 1, (k - 1) (alpha + N / B)."""
    _check(n_bytes, k, bandwidth, latency)
    return ring_broadcast_steps(k, chunks) * (latency + n_bytes / (chunks * bandwidth))


def optimal_chunks(n_bytes: float, k: int, bandwidth: float, latency: float) -> int:
    """The S that minimises ``ring_broadcast_time``: d/dS of (S + k - 2)(alpha + N/(S B)) is
    alpha - (k - 2) N / (S^2 B), zero at S = sqrt((k - 2) N / (alpha B)); the better of the
    integers either side (1 when k <= 2: a ring of two gains nothing from pipelining)."""
    _check(n_bytes, k, bandwidth, latency)
    if latency <= 0:
        raise ValueError("with no latency more chunks are always faster (the time tends to N / B): give latency > 0")
    if k <= 2 or n_bytes == 0:
        return 1
    best = math.sqrt((k - 2) * n_bytes / (latency * bandwidth))
    candidates = {max(1, math.floor(best)), max(1, math.ceil(best))}
    return min(candidates, key=lambda s: (ring_broadcast_time(n_bytes, k, bandwidth, s, latency), s))


def ring_broadcast_schedule(k: int, chunks: int = 1, src: int = 0) -> list[tuple[int, int, int, int]]:
    """Every transfer of ``gpudl.collectives.ring.ring_broadcast`` as (step, sender, receiver,
    chunk): the rank p places after ``src`` sends chunk c in step p + c."""
    steps = ring_broadcast_steps(k, chunks)
    out = []
    for step in range(steps):
        for p in range(k - 1):
            c = step - p
            if 0 <= c < chunks:
                out.append((step, (src + p) % k, (src + p + 1) % k, c))
    return out


# --- reduce-scatter, all-gather, all-reduce ---------------------------------------------------------

@reference
def ring_reduce_scatter_time(n_bytes: float, k: int, bandwidth: float, latency: float = 0.0) -> float:
    """(k - 1) steps of N / k bytes: (k - 1) (alpha + N / (k B))."""
    _check(n_bytes, k, bandwidth, latency)
    return (k - 1) * (latency + n_bytes / (k * bandwidth))


@reference
def ring_all_gather_time(n_bytes: float, k: int, bandwidth: float, latency: float = 0.0) -> float:
    """``n_bytes`` is the gathered size; the same k - 1 steps of N / k as a reduce-scatter."""
    return ring_reduce_scatter_time(n_bytes, k, bandwidth, latency)


@reference
def ring_all_reduce_time(n_bytes: float, k: int, bandwidth: float, latency: float = 0.0) -> float:
    """Reduce-scatter then all-gather: 2 (k - 1) (alpha + N / (k B)), i.e. 2 (k - 1) alpha +
    2 (k - 1) / k N / B: the bandwidth term hardly grows with k, the latency term does."""
    _check(n_bytes, k, bandwidth, latency)
    return 2 * (k - 1) * (latency + n_bytes / (k * bandwidth))


def tree_all_reduce_time(n_bytes: float, k: int, bandwidth: float, latency: float = 0.0, chunks: int = 1) -> float:
    """A reduce up a binary tree, then a broadcast down it, each pipelined in ``chunks``
    pieces: 2 (d + S - 1) (alpha + N / (S B)) with depth d = ceil(log2 k). Its latency grows
    with log2 k instead of k, which is why NCCL uses trees for small messages at scale; for
    large ones the ring's 2 (k - 1) / k N / B beats the tree's 2 N / B."""
    _check(n_bytes, k, bandwidth, latency)
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    if k == 1:
        return 0.0
    depth = math.ceil(math.log2(k))
    return 2 * (depth + chunks - 1) * (latency + n_bytes / (chunks * bandwidth))


# --- bytes on the wire ------------------------------------------------------------------------------

@reference
def bytes_per_rank(collective: str, n_bytes: float, k: int) -> float:
    """Bytes each rank sends in the ring algorithm, by formula: all-reduce 2 (k - 1) / k N,
    reduce-scatter and all-gather (k - 1) / k N, broadcast N (every rank but the ring's last)."""
    if collective not in ("broadcast", "reduce_scatter", "all_gather", "all_reduce"):
        raise ValueError(f"unknown collective {collective!r}")
    _check(n_bytes, k, 1.0)
    if k == 1:
        return 0.0
    return {"broadcast": n_bytes, "reduce_scatter": (k - 1) / k * n_bytes, "all_gather": (k - 1) / k * n_bytes,
            "all_reduce": 2 * (k - 1) / k * n_bytes}[collective]


def ring_bytes_sent(collective: str, numel: int, k: int, element_size: int = 4, src: int = 0) -> list[int]:
    """Exact bytes each rank sends in ``gpudl.collectives.ring`` for a tensor of ``numel``
    elements, chunks cut as ``torch.tensor_split`` cuts them (chunk i has c_i elements):
    reduce-scatter, N - c_r (rank r keeps chunk r); all-gather, N - c_(r+1) (rank r never
    forwards its right neighbour's chunk); all-reduce, both; broadcast, N but 0 on the ring's
    last rank, (src - 1) % k."""
    from .ring import chunk_bounds

    if k < 1 or numel < 0:
        raise ValueError(f"need k >= 1 and numel >= 0, got k={k}, numel={numel}")
    if k == 1:
        return [0]
    sizes = [b - a for a, b in chunk_bounds(numel, k)]
    rs = [numel - sizes[r] for r in range(k)]
    ag = [numel - sizes[(r + 1) % k] for r in range(k)]
    counts = {"reduce_scatter": rs, "all_gather": ag, "all_reduce": [a + b for a, b in zip(rs, ag)],
              "broadcast": [0 if r == (src - 1) % k else numel for r in range(k)]}
    if collective not in counts:
        raise ValueError(f"unknown collective {collective!r}")
    return [c * element_size for c in counts[collective]]


# --- nccl-tests' bandwidths ---------------------------------------------------------------------

def algorithm_bandwidth(n_bytes: float, seconds: float) -> float:
    """nccl-tests' algbw: the message size over the time, bytes/s."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    return n_bytes / seconds


@reference
def bus_bandwidth_factor(collective: str, k: int) -> float:
    """busbw / algbw in nccl-tests: what each link carries relative to the message, so that a
    collective on k GPUs can be compared with the hardware's link bandwidth. All-reduce
    2 (k - 1) / k, reduce-scatter and all-gather (k - 1) / k, broadcast and reduce 1."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    factors = {"all_reduce": 2 * (k - 1) / k, "reduce_scatter": (k - 1) / k, "all_gather": (k - 1) / k,
               "broadcast": 1.0, "reduce": 1.0}
    if collective not in factors:
        raise ValueError(f"unknown collective {collective!r}; one of {', '.join(COLLECTIVES)}")
    return factors[collective]


def bus_bandwidth(collective: str, n_bytes: float, seconds: float, k: int) -> float:
    """nccl-tests' busbw: algbw times ``bus_bandwidth_factor``."""
    return algorithm_bandwidth(n_bytes, seconds) * bus_bandwidth_factor(collective, k)


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


__all__ = ["COLLECTIVES", "PCIE_LECTURE_BANDWIDTH", "LECTURE_EXAMPLE", "ring_broadcast_steps", "ring_broadcast_time",
           "optimal_chunks", "ring_broadcast_schedule", "ring_reduce_scatter_time", "ring_all_gather_time",
           "ring_all_reduce_time", "tree_all_reduce_time", "bytes_per_rank", "ring_bytes_sent",
           "algorithm_bandwidth", "bus_bandwidth_factor", "bus_bandwidth", "NVLINK_BANDWIDTH", "nvlink_bandwidth",
           "IMAGENET_TRAIN_IMAGES", "RESNET50_EPOCHS", "ScalingRun", "SCALING_TABLE", "images_per_second",
           "gpu_hours", "scaling_rows"]
