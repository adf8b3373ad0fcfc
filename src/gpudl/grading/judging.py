"""Judging a timed figure against the package's own, honestly on a busy or boosting device.

A check that times work (lab 02's FLOP/s, lab 07's kernel beside SDPA) measures the student's
figure and the package's on the same work in turns, several rounds, and judges the median ratio;
a measurement that is neither clearly right nor clearly wrong is made again, never failed.
Public names: ``judge_ratio``.
"""
from __future__ import annotations

from typing import Callable


def judge_ratio(measure: Callable[[], tuple[float, float]], *, passes: Callable[[float], bool],
                fails: Callable[[float], bool], fail: Callable[[float, float], None], rounds: int = 3,
                attempts: int = 3) -> None:
    """Judge a timed figure against the package's, honestly on a busy or boosting device.

    ``measure()`` is one round: the student's figure and the package's on the same work, measured
    back to back (interleaved, the same warm-up and timer, at the same clocks). The round of the
    median ratio (of ``rounds``) is judged: ``passes(ratio)`` returns; ``fails(ratio)`` (a ratio
    no correct answer gives, far outside what passes) calls ``fail(value, expected)``, which raises
    the teaching message; in between the measurement is inconclusive and is made again, up to
    ``attempts`` times, and then passes: a disturbed measurement is repeated, never failed."""
    __tracebackhide__ = True
    for _ in range(attempts):
        pairs = sorted((measure() for _ in range(rounds)), key=lambda p: p[0] / p[1])
        value, expected = pairs[len(pairs) // 2]            # the round of the median ratio
        ratio = value / expected
        if passes(ratio):
            return
        if fails(ratio):
            fail(value, expected)
            return


__all__ = ["judge_ratio"]
