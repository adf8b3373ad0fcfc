"""Figures the notebooks share: log axes whose tick labels stay readable.

On a log axis spanning about one decade (sequence lengths 256 to 4096, say), matplotlib labels
the minor ticks too, as ``2x10^2``, ``3x10^2``, ``4x10^2`` ..., and neighbours overlap. A
measured sweep reads better with its own sizes as the ticks.

``log_axis``            a log axis with major ticks at given values, labelled as plain numbers,
                        and unlabelled minor ticks
``overlapping_labels``  the tick labels and annotations that overlap in a figure as drawn (for tests)
"""
from __future__ import annotations

from itertools import combinations
from typing import Any, Iterable


def log_axis(ax: Any, which: str = "x", ticks: Iterable[float] | None = None, *, base: float = 10) -> None:
    """Make ``ax``'s ``which`` axis ("x" or "y") logarithmic in ``base``; with ``ticks``, put the
    labelled ticks exactly there (``f"{v:g}"``: 256, 4096, 1e+06); never label minor ticks."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    if which not in ("x", "y"):
        raise ValueError(f"which must be 'x' or 'y', got {which!r}")
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=base)
    if ticks is not None:
        values = sorted({float(v) for v in ticks})
        if not values or values[0] <= 0:
            raise ValueError(f"log-axis ticks must be positive, got {values}")
        axis.set_major_locator(FixedLocator(values))
        axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def overlapping_labels(fig: Any) -> list[tuple[str, str]]:
    """Pairs of texts that overlap on ``fig`` once drawn: tick labels of one axis, and
    annotations of one Axes."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pairs = []
    for ax in fig.axes:
        groups = [axis.get_ticklabels(which="both") for axis in (ax.xaxis, ax.yaxis)] + [ax.texts]
        for texts in groups:
            boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text()]
            pairs += [(a, b) for (a, box_a), (b, box_b) in combinations(boxes, 2) if box_a.overlaps(box_b)]
    return pairs
