"""Data-parallel training: every rank holds the model, takes its share of the batch, and the
ranks average their gradients before the same update.

With k ranks and a batch of B examples, rank r computes the gradient of the mean loss over
its B / k examples; the mean of those k gradients is the gradient of the mean loss over the
whole batch, so after the update every rank holds exactly what one process training on the
whole batch would hold (up to rounding). The averaging is an all-reduce, divided by k.

Doing it well means overlapping it with the backward pass. Gradients become ready in reverse
order of the parameters (the last layer's first), so DDP groups parameters into *buckets* of
about ``bucket_cap_mb`` filled in that reverse order, and all-reduces each bucket (one
flattened buffer: one collective instead of one per tensor) as soon as its last gradient
arrives, while backward goes on computing the earlier layers' gradients.

Reading order:

- ``plan_buckets``: parameter indices in buckets, in reverse order, DDP's size rule;
- ``GradientBuckets``: post-accumulate-grad hooks that all-reduce each bucket when it is ready
  (``overlap=True``) or all buckets after backward (``overlap=False``), with any all-reduce
  (the hand-written ``ring_all_reduce`` by default), on ``plan_buckets``' plan or one given;
- ``TrainConfig``, ``make_model``, ``make_batch``, ``shard``, ``sgd_step``;
- ``train_single`` (one process, whole batch) and ``train_data_parallel`` (a worker of
  ``launch``: "ring" buckets, "torch" buckets on ``dist.all_reduce``, or "ddp",
  ``torch.nn.parallel.DistributedDataParallel``); both return the parameters after every step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
import torch.distributed as dist

from ..references import reference
from .ring import ring_all_reduce


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
        grads = [self.params[i].grad for i in self.buckets[b]]
        flat = torch.cat([g.reshape(-1) for g in grads])        # one buffer: one collective
        self.all_reduce(flat)
        flat /= dist.get_world_size()
        offset = 0
        for g in grads:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()
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


# --- a small model, its data, and training --------------------------------------------------------

@dataclass(frozen=True)
class TrainConfig:
    """A small MLP regression: layer widths, batch, steps, learning rate, seed, bucket size."""

    widths: tuple[int, ...] = (6, 32, 32, 3)
    batch: int = 24
    steps: int = 3
    lr: float = 0.1
    seed: int = 0
    bucket_mb: float = 0.001           # tiny (1 KiB), so that the small model has several buckets
    dtype: str = "float64"

    def __post_init__(self) -> None:
        if len(self.widths) < 2 or min(self.widths) < 1:
            raise ValueError(f"widths need at least an input and an output width, got {self.widths}")
        if self.batch < 1 or self.steps < 1 or self.lr <= 0 or self.bucket_mb <= 0:
            raise ValueError(f"batch, steps, lr and bucket_mb must be positive: {self}")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")


def make_model(cfg: TrainConfig, device: torch.device | str = "cpu") -> torch.nn.Sequential:
    """The MLP of ``cfg`` (Linear, Tanh, ..., Linear), initialised from ``cfg.seed``: the same on
    every rank."""
    gen = torch.Generator().manual_seed(cfg.seed)
    layers: list[torch.nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(cfg.widths[:-1], cfg.widths[1:])):
        lin = torch.nn.Linear(n_in, n_out, dtype=getattr(torch, cfg.dtype))
        with torch.no_grad():
            lin.weight.copy_(torch.randn(n_out, n_in, generator=gen) / n_in ** 0.5)
            lin.bias.copy_(0.1 * torch.randn(n_out, generator=gen))
        layers.append(lin)
        if i < len(cfg.widths) - 2:
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers).to(device)


def make_batch(cfg: TrainConfig, step: int, device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Step ``step``'s whole batch (x, y), the same on every rank: (batch, in), (batch, out)."""
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step + 1)
    dt = getattr(torch, cfg.dtype)
    x = torch.randn(cfg.batch, cfg.widths[0], generator=gen, dtype=dt)
    y = torch.randn(cfg.batch, cfg.widths[-1], generator=gen, dtype=dt)
    return x.to(device), y.to(device)


def shard(batch: torch.Tensor, rank: int, world: int) -> torch.Tensor:
    """Rank ``rank``'s equal share of ``batch`` (its rows rank*B/k ... (rank+1)*B/k)."""
    if batch.shape[0] % world:
        raise ValueError(f"a batch of {batch.shape[0]} does not split into {world} equal shares: the average of "
                         "the ranks' gradients is the whole batch's only when the shares are equal")
    n = batch.shape[0] // world
    return batch[rank * n:(rank + 1) * n]


def sgd_step(model: torch.nn.Module, lr: float) -> None:
    """p -= lr * p.grad for every parameter, then clear the gradients."""
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None


def _flat_params(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()


def train_single(cfg: TrainConfig) -> torch.Tensor:
    """One process on the whole batch: the parameters, flattened, after each step (steps, P)."""
    model = make_model(cfg)
    history = []
    for step in range(cfg.steps):
        x, y = make_batch(cfg, step)
        torch.nn.functional.mse_loss(model(x), y).backward()
        sgd_step(model, cfg.lr)
        history.append(_flat_params(model))
    return torch.stack(history)


def train_data_parallel(rank: int, world: int, cfg: TrainConfig, mode: str = "ring", overlap: bool = True) -> dict:
    """A worker of ``launch``: train on this rank's share of each batch, averaging gradients by
    ``mode``: "ring" (``GradientBuckets`` on the hand-written ring all-reduce), "torch"
    (``GradientBuckets`` on ``dist.all_reduce``) or "ddp" (``DistributedDataParallel`` with
    ``bucket_cap_mb``). Returns {"params": (steps, P) after each step, "buckets": the bucket
    plan, "order": the order buckets were reduced in the last step}."""
    if mode not in ("ring", "torch", "ddp"):
        raise ValueError(f"mode must be 'ring', 'torch' or 'ddp', got {mode!r}")
    from .launch import worker_device

    device = worker_device()
    model = make_model(cfg, device)
    buckets = None
    if mode == "ddp":
        kwargs = {"device_ids": [device.index]} if device.type == "cuda" else {}
        net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cfg.bucket_mb, **kwargs)
    else:
        net = model
        reduce = ring_all_reduce if mode == "ring" else dist.all_reduce
        buckets = GradientBuckets(list(model.parameters()), cfg.bucket_mb, all_reduce=reduce, overlap=overlap)
    history = []
    for step in range(cfg.steps):
        x, y = make_batch(cfg, step, device)
        loss = torch.nn.functional.mse_loss(net(shard(x, rank, world)), shard(y, rank, world))
        loss.backward()
        if buckets is not None:
            buckets.synchronize()
        sgd_step(model, cfg.lr)
        history.append(_flat_params(model))
    return {"params": torch.stack(history), "buckets": buckets.buckets if buckets else None,
            "order": buckets.last_order if buckets else None}


__all__ = ["plan_buckets", "GradientBuckets", "TrainConfig", "make_model", "make_batch", "shard", "sgd_step",
           "train_single", "train_data_parallel"]
