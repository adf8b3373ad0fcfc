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
arrives, while backward goes on computing the earlier layers' gradients. (Bucketing and the
averaged step by hand are lab 10's exercises.)

Reading order:

- ``TrainConfig``, ``make_model``, ``make_batch``, ``shard``, ``flat_params``: a small MLP
  regression, the same on every rank, and each rank's share of a batch;
- ``train_single`` (one process, whole batch, ``torch.optim.SGD``) and ``train_ddp`` (a worker
  of ``launch``: ``torch.nn.parallel.DistributedDataParallel``); both return the parameters
  after every step.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


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


def flat_params(model: torch.nn.Module) -> torch.Tensor:
    """Every parameter of ``model``, flattened into one vector on the CPU."""
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()


def train_single(cfg: TrainConfig) -> torch.Tensor:
    """One process on the whole batch, with ``torch.optim.SGD``: the parameters, flattened, after
    each step (steps, P). What data-parallel training on any number of ranks must reproduce."""
    model = make_model(cfg)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    history = []
    for step in range(cfg.steps):
        x, y = make_batch(cfg, step)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        history.append(flat_params(model))
    return torch.stack(history)


def train_ddp(rank: int, world: int, cfg: TrainConfig) -> torch.Tensor:
    """A worker of ``launch``: train with ``torch.nn.parallel.DistributedDataParallel`` (buckets of
    ``cfg.bucket_mb``, all-reduced during backward) on this rank's share of each batch, with
    ``torch.optim.SGD``; the parameters, flattened, after each step (steps, P)."""
    from .launch import worker_device

    device = worker_device()
    model = make_model(cfg, device)
    kwargs = {"device_ids": [device.index]} if device.type == "cuda" else {}
    net = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cfg.bucket_mb, **kwargs)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    history = []
    for step in range(cfg.steps):
        x, y = make_batch(cfg, step, device)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(net(shard(x, rank, world)), shard(y, rank, world))
        loss.backward()
        opt.step()
        history.append(flat_params(model))
    return torch.stack(history)


__all__ = ["TrainConfig", "make_model", "make_batch", "shard", "flat_params", "train_single", "train_ddp"]
