"""The traffic blocking saves: an LRU cache simulator to check the lecture's model against.

With ``N`` blocks per side of an ``n x n`` matrix (tiles of ``b = n / N``), blocked GEMM moves
``m = (2N + 2) n^2`` words between slow and fast memory, so it does ``q = f / m ~ b`` FLOPs per
word, if three ``b x b`` tiles fit in the fast memory of ``M`` words: ``b <= sqrt(M / 3)``.
Lab 03 has you write that model (``blocked_traffic``, ``optimal_block``); this module holds what
it is checked against. The unblocked loop moves ``n^3 + 3 n^2`` words: about 2 FLOPs per word.

``naive_traffic``               the unblocked loop's words (the lecture)
``Trace``, ``loop_trace``, ``blocked_trace``   the memory accesses of a loop nest, as word addresses
``CacheStats``, ``simulate_traffic``   an LRU cache (capacity, line size) that counts the words a
                                trace moves
``lru_capacity_for_block``, ``traffic_table``   the cache the model assumes; simulated traffic per
                                block (next to a model you pass, e.g. your ``blocked_traffic``)
``cpu_cache_bytes``             this CPU's cache sizes, to choose a block
"""
from __future__ import annotations

import math
import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..references import reference
from .loops import LOOP_ORDERS

# --- the unblocked loop's traffic (the lecture) ---------------------------------------------------

def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


@reference
def naive_traffic(n: int) -> int:
    """Words moved between slow and fast memory by the unblocked ``ijk`` loop on ``n x n``
    matrices, when fast memory holds a row of A (and a few words) but not B:
    each row of A read once (n^2), each column of B read once per row of C (n^3), each
    entry of C read and written once (2 n^2): ``n^3 + 3 n^2``, about 2 FLOPs per word.
    Marked as a reference so that lab 03's traffic exercise cannot call it."""
    n = _positive("n", n)
    return n ** 3 + 3 * n ** 2


# --- the cache simulator -----------------------------------------------------------------------

@dataclass(frozen=True)
class Trace:
    """The memory accesses of a loop nest in program order: word ``addresses`` and whether each
    access is a ``write``. ``regions`` names the matrices: name -> (first word, words)."""

    addresses: np.ndarray
    writes: np.ndarray
    regions: tuple[tuple[str, int, int], ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        a, w = np.asarray(self.addresses), np.asarray(self.writes)
        if a.ndim != 1 or a.shape != w.shape:
            raise ValueError(f"addresses and writes must be 1-D of one length, got {a.shape} and {w.shape}")
        if a.size and a.min() < 0:
            raise ValueError("addresses must be non-negative")
        object.__setattr__(self, "addresses", a.astype(np.int64, copy=False))
        object.__setattr__(self, "writes", w.astype(bool, copy=False))

    def __len__(self) -> int:
        return int(self.addresses.size)


_ALIGN = 4096      # matrices start on a multiple of this many words, so every line size <= it aligns


def _layout(m: int, n: int, k: int) -> dict[str, int]:
    """Row-major A (m, k), B (k, n), C (m, n), one after the other, each aligned."""
    up = lambda x: -(-x // _ALIGN) * _ALIGN   # noqa: E731
    a0 = 0
    b0 = up(a0 + m * k)
    c0 = up(b0 + k * n)
    return {"A": a0, "B": b0, "C": c0}


def _regions(base: dict[str, int], m: int, n: int, k: int) -> tuple[tuple[str, int, int], ...]:
    return (("A", base["A"], m * k), ("B", base["B"], k * n), ("C", base["C"], m * n))


def loop_trace(n: int, order: str = "ijk", *, m: int | None = None, k: int | None = None) -> Trace:
    """Accesses of ``C[i, j] += A[i, k] * B[k, j]`` in loop order ``order``: per multiply-add,
    read A[i, k], read B[k, j], update C[i, j] (one read-modify-write access). Matrices are
    row-major; ``n`` is the size of square matrices (or pass ``m``, ``k`` for (m, k) x (k, n))."""
    if order not in LOOP_ORDERS:
        raise ValueError(f"order must be one of {LOOP_ORDERS}, got {order!r}")
    m = n if m is None else m
    k = n if k is None else k
    extent = {"i": m, "j": n, "k": k}
    grids = np.indices([extent[c] for c in order]).reshape(3, -1)   # loop indices, outermost first
    i, j, p = (grids[order.index(c)] for c in "ijk")
    base = _layout(m, n, k)
    rows = np.stack([base["A"] + i * k + p, base["B"] + p * n + j, base["C"] + i * n + j], axis=1)  # (mnk, 3)
    writes = np.zeros(rows.shape, dtype=bool)
    writes[:, 2] = True
    return Trace(rows.ravel(), writes.ravel(), _regions(base, m, n, k), f"{order} loops, {m}x{k} @ {k}x{n}")


def blocked_trace(n: int, block: int, *, m: int | None = None, k: int | None = None) -> Trace:
    """Accesses of blocked GEMM with ``block x block`` tiles (edge tiles smaller): for each
    tile triple (i, j, k blocks, k innermost), for each entry (i, j) of the C tile, read
    ``C[i, j]``, then A[i, k], B[k, j] for each k of the tile, then write ``C[i, j]``."""
    m = n if m is None else m
    k = n if k is None else k
    block = _positive("block", block)
    base = _layout(m, n, k)
    addrs, writes = [], []
    for i0 in range(0, m, block):
        for j0 in range(0, n, block):
            for p0 in range(0, k, block):
                I = np.arange(i0, min(i0 + block, m))
                J = np.arange(j0, min(j0 + block, n))
                P = np.arange(p0, min(p0 + block, k))
                ii, jj = (g.ravel() for g in np.meshgrid(I, J, indexing="ij"))
                rows = np.empty((ii.size, 2 * P.size + 2), dtype=np.int64)    # one row per C entry
                rows[:, 0] = base["C"] + ii * n + jj
                rows[:, 1:-1:2] = base["A"] + ii[:, None] * k + P[None, :]
                rows[:, 2:-1:2] = base["B"] + P[None, :] * n + jj[:, None]
                rows[:, -1] = rows[:, 0]
                w = np.zeros(rows.shape, dtype=bool)
                w[:, -1] = True
                addrs.append(rows.ravel())
                writes.append(w.ravel())
    return Trace(np.concatenate(addrs), np.concatenate(writes), _regions(base, m, n, k),
                 f"blocked, tiles {block}, {m}x{k} @ {k}x{n}")


@dataclass(frozen=True)
class CacheStats:
    """What a trace cost in a cache: line fills (misses) and dirty lines written back."""

    accesses: int
    misses: int
    writebacks: int
    capacity_words: int
    line_words: int

    def __post_init__(self) -> None:
        if min(self.accesses, self.misses, self.writebacks) < 0:
            raise ValueError("counts must be non-negative")

    @property
    def words_read(self) -> int:
        return self.misses * self.line_words

    @property
    def words_written(self) -> int:
        return self.writebacks * self.line_words

    @property
    def words(self) -> int:
        """Words moved between slow and fast memory, both directions."""
        return self.words_read + self.words_written

    @property
    def hit_rate(self) -> float:
        return 1.0 - self.misses / self.accesses if self.accesses else 1.0


def simulate_traffic(trace: Trace, capacity_words: int, line_words: int = 1) -> CacheStats:
    """Run ``trace`` through a fully associative LRU write-back cache of ``capacity_words``
    words in lines of ``line_words``, starting empty; dirty lines left at the end are written
    back (C must reach slow memory). Returns the traffic.

    Consecutive accesses to one line are merged first: the second is always a hit and does not
    change the LRU order, so the counts are exact and the loop is shorter.
    """
    line_words = _positive("line_words", line_words)
    capacity_words = _positive("capacity_words", capacity_words)
    if capacity_words % line_words:
        raise ValueError(f"capacity ({capacity_words} words) must be a whole number of lines of {line_words} words")
    lines = trace.addresses // line_words
    if lines.size == 0:
        return CacheStats(0, 0, 0, capacity_words, line_words)
    starts = np.flatnonzero(np.r_[True, lines[1:] != lines[:-1]])
    run_lines = lines[starts]
    run_writes = np.logical_or.reduceat(trace.writes, starts)
    capacity = capacity_words // line_words
    cache: OrderedDict[int, bool] = OrderedDict()       # line -> dirty, least recently used first
    misses = writebacks = 0
    for line, write in zip(run_lines.tolist(), run_writes.tolist()):
        if line in cache:
            cache.move_to_end(line)
            if write:
                cache[line] = True
        else:
            misses += 1
            if len(cache) >= capacity:
                writebacks += cache.popitem(last=False)[1]
            cache[line] = write
    writebacks += sum(cache.values())
    return CacheStats(len(trace), misses, writebacks, capacity_words, line_words)


def cpu_cache_bytes(level: int = 3, default: int = 8 * 2**20) -> int:
    """Size of this CPU's level-``level`` data cache, read from Linux's sysfs (``default`` if unknown)."""
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry)
            with open(os.path.join(path, "level")) as f:
                lvl = int(f.read())
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            if lvl == level and kind in ("Data", "Unified"):
                with open(os.path.join(path, "size")) as f:
                    text = f.read().strip().upper()
                scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1)
                return int(text.rstrip("KMG")) * scale
    except (OSError, ValueError):
        pass
    return default


def lru_capacity_for_block(block: int, line_words: int = 1, slack: float = 1.5) -> int:
    """The cache (words, whole lines) that holds three ``block x block`` tiles with LRU's slack.

    The model assumes fast memory holds exactly the three tiles in use. An LRU cache keeps
    the previous step's tiles of A and B until they are the oldest, so it needs about 1.5x
    that room (``slack``) before it moves only what the model says."""
    words = math.ceil(slack * 3 * _positive("block", block) ** 2)
    return -(-words // line_words) * line_words


def traffic_table(n: int = 64, blocks: Sequence[int] = (4, 8, 16, 32), *, line_words: int = 4,
                  capacity_words: int | None = None,
                  model: Callable[[int, int], int] | None = None) -> list[dict[str, Any]]:
    """Simulated (LRU) words moved by blocked GEMM on ``n x n``, for each block; with ``model``
    (a function ``(n, block) -> words``, such as lab 03's ``blocked_traffic``), also the
    modelled words and the ratio simulated / model.

    By default each block gets the cache ``lru_capacity_for_block`` sizes for it (the model's
    fast memory); pass ``capacity_words`` to give every block the same cache instead. The
    lecture's model is exact when the line size divides ``n`` and the block; a larger cache
    moves no more (LRU misses never grow with capacity), so the model is then an upper bound."""
    rows = []
    for b in blocks:
        cap = capacity_words or lru_capacity_for_block(b, line_words)
        sim = simulate_traffic(blocked_trace(n, b), cap, line_words).words
        row = {"n": n, "block": b, "cache words": cap, "line words": line_words, "simulated words": sim}
        if model is not None:
            words = model(n, b)
            row |= {"model words": words, "simulated/model": sim / words}
        rows.append(row)
    return rows
