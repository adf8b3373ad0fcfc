"""The ring, and what crosses it: the tools lab 10's hand-written collectives are built and
measured with (the collectives themselves are the lab's exercises).

The ring: rank r sends to its right neighbour (r + 1) % k and receives from its left neighbour
(r - 1) % k. Every step posts its send and its receive together (``batch_isend_irecv``): a
blocking send posted first on every rank would wait forever for a receive that no rank has
posted yet.

A tensor of N elements is cut into k chunks the way ``torch.tensor_split`` cuts it: the first
N % k chunks have N // k + 1 elements, the others N // k. So nothing is lost when N is not
divisible by k, and every rank knows every chunk's size without asking.

- ``ring_neighbours(rank, world)``: (left, right);
- ``chunk_bounds(numel, parts)``: [start, stop) of each chunk, as ``torch.tensor_split`` cuts;
- ``traffic()``: a context manager that counts what the process group really sends (every
  point-to-point send, in bytes, and every collective call) and logs the sends and receives
  in the order they were posted, however they were called (``Traffic``).
"""
from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

import torch.distributed as dist


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


__all__ = ["traffic", "Traffic", "ring_neighbours", "chunk_bounds"]
