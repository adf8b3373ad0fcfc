"""The references of lab10_multi_gpu, in the lab's reading order.

1. ``ring_broadcast_steps``, ``ring_broadcast_time``, ``optimal_chunks``
                                   the lecture's ring broadcast, unpipelined and in S chunks (``cost_models``)
   ``ring_reduce_scatter_time``, ``ring_all_gather_time``, ``ring_all_reduce_time``
                                   the ring's alpha-beta models (``cost_models``)
   ``bus_bandwidth_factor``, ``bus_bandwidth``, ``bytes_per_rank``
                                   nccl-tests' busbw / algbw and the ring's bytes per rank by formula
   ``ring_bytes_sent``             the exact bytes each rank of the ring collectives sends, any N
                                   (the visible checks' byte counts)
2. ``ring_broadcast``              the pipelined ring broadcast on point-to-point
3. ``ring_reduce_scatter``         k - 1 steps, adding the received chunk
4. ``ring_all_gather``             k - 1 steps, in place
5. ``ring_all_reduce``             reduce-scatter, then all-gather
6. ``plan_buckets``                gradients in buckets, in reverse order, DDP's size rule
7. ``data_parallel_step``          one rank's step: its shard's gradient, averaged bucket by bucket
   ``GradientBuckets``, ``train_data_parallel``
                                   the same with hooks during backward ("ring" or "torch" all-reduce,
                                   with or without overlap), and DDP, for the tests and the benchmark

These were ``gpudl.collectives.cost``, ``ring`` and ``data_parallel`` before the course edition lost
its answers; what stayed there (the launcher, ``traffic()``, ``chunk_bounds``, the broadcast's
schedule, the tree model, nccl-tests' algbw, the small MLP and its data, one process on the whole
batch, DDP, the measurements) is imported from it. Each ring function runs on every rank of the
default process group, works in place and returns the bytes *this rank* sent.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
import torch.distributed as dist

from gpudl.collectives.cost import COLLECTIVES
from gpudl.collectives.data_parallel import TrainConfig, flat_params, make_batch, make_model, shard, train_ddp
from gpudl.collectives.launch import worker_device
from gpudl.collectives.ring import chunk_bounds, ring_neighbours
from gpudl.references import reference


def _check(n_bytes: float, k: int, bandwidth: float, latency: float = 0.0) -> None:
    if n_bytes < 0:
        raise ValueError(f"n_bytes must be >= 0, got {n_bytes}")
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k (the number of GPUs) must be a positive int, got {k!r}")
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be > 0 bytes/s, got {bandwidth}")
    if latency < 0:
        raise ValueError(f"latency must be >= 0 s, got {latency}")


# =======================================================================================
# 1. What a collective costs

@reference
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


@reference
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


@reference
def bus_bandwidth(collective: str, n_bytes: float, seconds: float, k: int) -> float:
    """nccl-tests' busbw: algbw (N / t) times ``bus_bandwidth_factor``."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds}")
    return n_bytes / seconds * bus_bandwidth_factor(collective, k)


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


@reference
def ring_bytes_sent(collective: str, numel: int, k: int, element_size: int = 4, src: int = 0) -> list[int]:
    """Exact bytes each rank sends in the ring collectives below for a tensor of ``numel``
    elements, chunks cut as ``torch.tensor_split`` cuts them (chunk i has c_i elements):
    reduce-scatter, N - c_r (rank r keeps chunk r); all-gather, N - c_(r+1) (rank r never
    forwards its right neighbour's chunk); all-reduce, both; broadcast, N but 0 on the ring's
    last rank, (src - 1) % k."""
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


# =======================================================================================
# 2-5. The ring collectives, on point-to-point

def _flat(tensor: torch.Tensor) -> torch.Tensor:
    if not tensor.is_contiguous():
        raise ValueError("the hand-written collectives work in place on a contiguous tensor")
    return tensor.view(-1)


def _exchange(send: torch.Tensor | None, right: int, recv: torch.Tensor | None, left: int) -> int:
    """Post a send to ``right`` and a receive from ``left`` together and wait for both; the
    bytes sent. Empty pieces are skipped (both ends know the sizes)."""
    ops = []
    if send is not None and send.numel():
        ops.append(dist.P2POp(dist.isend, send, right))
    if recv is not None and recv.numel():
        ops.append(dist.P2POp(dist.irecv, recv, left))
    if ops:
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    return send.numel() * send.element_size() if send is not None else 0


@reference
def ring_broadcast(tensor: torch.Tensor, src: int = 0, chunks: int = 1) -> int:
    """Broadcast ``tensor`` from rank ``src`` to every rank (in place) round the ring, pipelined
    in ``chunks`` pieces; returns the bytes this rank sent (N, or 0 on the ring's last rank).
    The rank p places after the source sends piece c in step p + c: S + k - 2 steps."""
    rank, k = dist.get_rank(), dist.get_world_size()
    if not 0 <= src < k:
        raise ValueError(f"src {src} is not a rank of a world of {k}")
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    left, right = ring_neighbours(rank, k)
    flat = _flat(tensor)
    pieces = [flat[a:b] for a, b in chunk_bounds(flat.numel(), chunks)]
    p = (rank - src) % k                         # distance from the source along the ring
    sent = 0
    for step in range(chunks + k - 2):
        c_send, c_recv = step - p, step - (p - 1)
        send = pieces[c_send] if p < k - 1 and 0 <= c_send < chunks else None
        recv = pieces[c_recv] if p > 0 and 0 <= c_recv < chunks else None
        sent += _exchange(send, right, recv, left)
    return sent


def _ring_chunks(tensor: torch.Tensor) -> tuple[int, int, int, int, list[torch.Tensor]]:
    """This rank, the world size, the ring's neighbours and the k chunks (views) of ``tensor``."""
    rank, k = dist.get_rank(), dist.get_world_size()
    flat = _flat(tensor)
    return rank, k, *ring_neighbours(rank, k), [flat[a:b] for a, b in chunk_bounds(flat.numel(), k)]


@reference
def ring_reduce_scatter(tensor: torch.Tensor) -> int:
    """Sum ``tensor`` over ranks so that chunk r of rank r's tensor holds chunk r of the sum
    (in place); returns the bytes this rank sent: N minus its own chunk. In step s rank r sends
    chunk (r - s - 1) % k, receives chunk (r - s - 2) % k and adds it in."""
    rank, k, left, right, chunks = _ring_chunks(tensor)
    sent = 0
    for step in range(k - 1):
        out, into = chunks[(rank - step - 1) % k], chunks[(rank - step - 2) % k]
        buf = torch.empty_like(into)
        sent += _exchange(out, right, buf, left)
        into += buf
    return sent


@reference
def ring_all_gather(tensor: torch.Tensor) -> int:
    """Given chunk r valid on rank r, fill in every chunk on every rank (in place); returns the
    bytes this rank sent: N minus the chunk of its right neighbour."""
    rank, k, left, right, chunks = _ring_chunks(tensor)
    sent = 0
    for step in range(k - 1):
        sent += _exchange(chunks[(rank - step) % k], right, chunks[(rank - step - 1) % k], left)
    return sent


@reference
def ring_all_reduce(tensor: torch.Tensor) -> int:
    """Sum ``tensor`` over ranks, in place on every rank: reduce-scatter, then all-gather.
    Returns the bytes this rank sent, 2 (k - 1) / k N when k divides N."""
    return ring_reduce_scatter(tensor) + ring_all_gather(tensor)


# =======================================================================================
# 6. Gradient buckets

@reference
def plan_buckets(param_bytes: Sequence[int], cap_bytes: int) -> list[list[int]]:
    """Group parameters (given by their gradients' sizes in bytes, in model order) into buckets:
    walk them from the last to the first, add each to the open bucket, and close the bucket
    once it holds ``cap_bytes`` or more (DDP's rule: a bucket may pass the cap by its last
    tensor). Returns lists of parameter indices, the first bucket holding the last parameters."""
    if cap_bytes <= 0:
        raise ValueError(f"cap_bytes must be > 0, got {cap_bytes}")
    if any(b < 0 for b in param_bytes):
        raise ValueError("parameter sizes must be >= 0 bytes")
    buckets: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i in reversed(range(len(param_bytes))):
        current.append(i)
        size += param_bytes[i]
        if size >= cap_bytes:
            buckets.append(current)
            current, size = [], 0
    if current:
        buckets.append(current)
    return buckets


# =======================================================================================
# 7. One data-parallel step

def _average(grads: Sequence[torch.Tensor], all_reduce: Callable[[torch.Tensor], object]) -> None:
    """One bucket: its gradients in one flat buffer, all-reduced once, divided by k, copied back."""
    flat = torch.cat([g.reshape(-1) for g in grads])
    all_reduce(flat)
    flat /= dist.get_world_size()
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))


@reference
def data_parallel_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float,
                       buckets: Sequence[Sequence[int]]) -> None:
    """One SGD step on this rank's shard (x, y): the MSE loss's gradients, averaged over ranks
    bucket by bucket with ``dist.all_reduce``, then p -= lr * p.grad."""
    params = list(model.parameters())
    torch.nn.functional.mse_loss(model(x), y).backward()
    for bucket in buckets:
        _average([params[i].grad for i in bucket], dist.all_reduce)
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None


class GradientBuckets:
    """All-reduce and average a model's gradients bucket by bucket.

    ``overlap=True``: a hook on each parameter notes its gradient; when a bucket's last one
    arrives, the bucket's gradients are flattened into one buffer, all-reduced with
    ``all_reduce(buffer)`` (in place, on every rank), divided by k and copied back, while
    backward continues. ``overlap=False``: nothing happens during backward; ``synchronize()``
    reduces every bucket afterwards. Call ``synchronize()`` after every backward either way
    (it checks that every bucket was reduced once). ``reduced`` lists bucket indices in the
    order they were reduced in the last step."""

    def __init__(self, params: Sequence[torch.nn.Parameter], bucket_mb: float = 25.0, *,
                 all_reduce: Callable[[torch.Tensor], object] = ring_all_reduce, overlap: bool = True,
                 buckets: Sequence[Sequence[int]] | None = None):
        self.params = list(params)
        self.all_reduce, self.overlap = all_reduce, overlap
        sizes = [p.numel() * p.element_size() for p in self.params]
        if buckets is None:
            buckets = plan_buckets(sizes, max(1, int(bucket_mb * 2**20)))
        self.buckets = [list(b) for b in buckets]
        if sorted(i for b in self.buckets for i in b) != list(range(len(self.params))):
            raise ValueError(f"buckets {self.buckets} must hold each of the {len(self.params)} parameters once")
        self._bucket_of = {i: b for b, members in enumerate(self.buckets) for i in members}
        self._waiting = [len(m) for m in self.buckets]
        self.reduced: list[int] = []
        self._handles = [p.register_post_accumulate_grad_hook(self._hook(i)) for i, p in enumerate(self.params)]

    def _hook(self, index: int):
        def ready(param: torch.Tensor) -> None:
            b = self._bucket_of[index]
            self._waiting[b] -= 1
            if self.overlap and self._waiting[b] == 0:
                self._reduce(b)
        return ready

    def _reduce(self, b: int) -> None:
        _average([self.params[i].grad for i in self.buckets[b]], self.all_reduce)
        self.reduced.append(b)

    def synchronize(self) -> None:
        """After backward: reduce what is left (everything, without overlap) and reset."""
        if any(self._waiting):
            missing = [b for b, w in enumerate(self._waiting) if w]
            raise RuntimeError(f"buckets {missing} did not get all their gradients: a parameter unused in the loss?")
        if not self.overlap:
            for b in range(len(self.buckets)):
                self._reduce(b)
        if sorted(self.reduced) != list(range(len(self.buckets))):
            raise RuntimeError(f"buckets reduced {self.reduced}, expected each of {len(self.buckets)} once")
        self._waiting = [len(m) for m in self.buckets]
        self._last, self.reduced = self.reduced, []

    @property
    def last_order(self) -> list[int]:
        """The order the buckets were reduced in, in the last completed step."""
        return list(getattr(self, "_last", []))

    def remove(self) -> None:
        for h in self._handles:
            h.remove()


def _sgd(model: torch.nn.Module, lr: float) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None


def train_data_parallel(rank: int, world: int, cfg: TrainConfig, mode: str = "ring", overlap: bool = True) -> dict:
    """A worker of ``launch``: train on this rank's share of each batch, averaging gradients by
    ``mode``: "ring" (``GradientBuckets`` on ``ring_all_reduce``), "torch" (``GradientBuckets`` on
    ``dist.all_reduce``) or "ddp" (the course's ``train_ddp``). Returns {"params": (steps, P)
    after each step, "buckets": the bucket plan, "order": the order buckets were reduced in the
    last step}."""
    if mode not in ("ring", "torch", "ddp"):
        raise ValueError(f"mode must be 'ring', 'torch' or 'ddp', got {mode!r}")
    if mode == "ddp":
        return {"params": train_ddp(rank, world, cfg), "buckets": None, "order": None}
    device = worker_device()
    model = make_model(cfg, device)
    reduce = ring_all_reduce if mode == "ring" else dist.all_reduce
    buckets = GradientBuckets(list(model.parameters()), cfg.bucket_mb, all_reduce=reduce, overlap=overlap)
    history = []
    for step in range(cfg.steps):
        x, y = make_batch(cfg, step, device)
        torch.nn.functional.mse_loss(model(shard(x, rank, world)), shard(y, rank, world)).backward()
        buckets.synchronize()
        _sgd(model, cfg.lr)
        history.append(flat_params(model))
    return {"params": torch.stack(history), "buckets": buckets.buckets, "order": buckets.last_order}


__all__ = ["ring_broadcast_steps", "ring_broadcast_time", "optimal_chunks", "ring_reduce_scatter_time",
           "ring_all_gather_time", "ring_all_reduce_time", "bus_bandwidth_factor", "bus_bandwidth", "bytes_per_rank",
           "ring_bytes_sent", "ring_broadcast", "ring_reduce_scatter", "ring_all_gather", "ring_all_reduce",
           "plan_buckets", "data_parallel_step", "GradientBuckets", "train_data_parallel"]
