"""Collectives written by hand on ``torch.distributed`` point-to-point, on a ring.

Each function runs on every rank of the default process group, works in place like its
``torch.distributed`` counterpart, and returns the number of bytes *this rank* sent, which
``gpudl.collectives.cost.ring_bytes_sent`` predicts exactly. The ring: rank r sends to its
right neighbour (r + 1) % k and receives from its left neighbour (r - 1) % k. Every step
posts its send and its receive together (``batch_isend_irecv``): a blocking send posted
first on every rank would wait forever for a receive that no rank has posted yet.

A tensor of N elements is cut into k chunks the way ``torch.tensor_split`` cuts it: the
first N % k chunks have N // k + 1 elements, the others N // k. So nothing is lost when N
is not divisible by k, and every rank knows every chunk's size without asking.

- ``ring_broadcast(tensor, src, chunks)``: the lecture's pipelined broadcast. The message goes
  round the ring in ``chunks`` (S) pieces; the rank at distance p from the source sends piece
  c in step p + c, so S + k - 2 steps of N / S bytes each, against k - 1 steps of N bytes
  unpipelined.
- ``ring_reduce_scatter(tensor)``: k - 1 steps; in step s rank r sends chunk (r - s - 1) % k,
  receives chunk (r - s - 2) % k and adds it in. Afterwards chunk r holds the sum over ranks
  (as in NCCL's in-place reduce-scatter; the other chunks hold partial sums).
- ``ring_all_gather(tensor)``: rank r's chunk r goes round: in step s rank r sends chunk
  (r - s) % k and receives chunk (r - s - 1) % k in place.
- ``ring_all_reduce(tensor)``: reduce-scatter then all-gather, 2 (k - 1) steps; each rank sends
  2 (k - 1) / k N bytes, whatever k: the bandwidth-optimal all-reduce.
- ``traffic()``: a context manager that counts what the process group really sends (every
  point-to-point send, in bytes, and every collective call) and logs the sends and receives
  in the order they were posted, however they were called.

Helpers: ``ring_neighbours``, ``chunk_bounds``.
"""
from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

import torch
import torch.distributed as dist

from ..references import reference


def ring_neighbours(rank: int, world: int) -> tuple[int, int]:
    """(left, right): the rank this one receives from and the rank it sends to."""
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not in a world of {world}")
    return (rank - 1) % world, (rank + 1) % world


def chunk_bounds(numel: int, parts: int) -> list[tuple[int, int]]:
    """[start, stop) of each of ``parts`` chunks of ``numel`` elements, as ``torch.tensor_split``
    cuts them: the first ``numel % parts`` chunks one element longer."""
    if parts < 1 or numel < 0:
        raise ValueError(f"cannot cut {numel} elements into {parts} chunks")
    base, extra = divmod(numel, parts)
    bounds, start = [], 0
    for i in range(parts):
        stop = start + base + (1 if i < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


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
    in ``chunks`` pieces; returns the bytes this rank sent (N, or 0 on the ring's last rank)."""
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


@reference
def ring_reduce_scatter(tensor: torch.Tensor) -> int:
    """Sum ``tensor`` over ranks so that chunk r of rank r's tensor holds chunk r of the sum
    (in place); returns the bytes this rank sent: N minus its own chunk."""
    rank, k = dist.get_rank(), dist.get_world_size()
    left, right = ring_neighbours(rank, k)
    flat = _flat(tensor)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), k)]
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
    rank, k = dist.get_rank(), dist.get_world_size()
    left, right = ring_neighbours(rank, k)
    flat = _flat(tensor)
    chunks = [flat[a:b] for a, b in chunk_bounds(flat.numel(), k)]
    sent = 0
    for step in range(k - 1):
        sent += _exchange(chunks[(rank - step) % k], right, chunks[(rank - step - 1) % k], left)
    return sent


@reference
def ring_all_reduce(tensor: torch.Tensor) -> int:
    """Sum ``tensor`` over ranks, in place on every rank: reduce-scatter, then all-gather.
    Returns the bytes this rank sent, 2 (k - 1) / k N when k divides N."""
    return ring_reduce_scatter(tensor) + ring_all_gather(tensor)


# --- what really crosses --------------------------------------------------------------------------

@dataclass
class Traffic:
    """What the process group was asked to do while ``traffic()`` was open."""

    sent_bytes: int = 0                 # bytes of every point-to-point send
    sends: int = 0
    calls: Counter = field(default_factory=Counter)   # collective name -> calls
    log: list = field(default_factory=list)           # ("send" | "recv", peer, bytes), in the order posted


_MISSING = object()
_COLLECTIVES = ("allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall", "barrier",
                "_allgather_base", "_reduce_scatter_base", "allgather_into_tensor_coalesced",
                "reduce_scatter_tensor_coalesced", "allreduce_coalesced")


@contextlib.contextmanager
def traffic() -> Iterator[Traffic]:
    """Count the bytes this process sends and the collectives it calls, at the process group's
    methods, whichever Python API (``send``, ``isend``, ``batch_isend_irecv``, ``P2POp``) got
    there. (DDP's reducer calls the group from C++ and is not counted.)"""
    pg = dist.ProcessGroup
    seen = Traffic()
    names = ["send", "recv"] + [n for n in _COLLECTIVES if hasattr(pg, n)]
    # The class's own entries (pybind's method descriptors), to put back exactly as they were.
    raw = {name: pg.__dict__.get(name, _MISSING) for name in names}
    call = {name: getattr(pg, name) for name in names}

    def counting_send(self, tensors, peer, *args, **kwargs):
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        seen.sends += 1
        seen.sent_bytes += nbytes
        seen.log.append(("send", int(peer), nbytes))
        return call["send"](self, tensors, peer, *args, **kwargs)

    def logging_recv(self, tensors, peer, *args, **kwargs):
        seen.log.append(("recv", int(peer), sum(t.numel() * t.element_size() for t in tensors)))
        return call["recv"](self, tensors, peer, *args, **kwargs)

    def counted(name):
        def run(self, *args, **kwargs):
            seen.calls[name.strip("_")] += 1
            return call[name](self, *args, **kwargs)
        return run

    try:
        for name in names:
            setattr(pg, name, {"send": counting_send, "recv": logging_recv}.get(name) or counted(name))
        yield seen
    finally:
        for name, entry in raw.items():
            if entry is _MISSING:
                delattr(pg, name)
            else:
                setattr(pg, name, entry)


__all__ = ["ring_broadcast", "ring_reduce_scatter", "ring_all_gather", "ring_all_reduce", "traffic", "Traffic",
           "ring_neighbours", "chunk_bounds"]
