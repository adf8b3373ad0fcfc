"""The figures lecture notebooks quote, and how each is computed.

One file per lecture notebook, ``tests/figures/<notebook stem>.py`` (``01_performance_basics``
...), defines ``FIGURES``: a list of ``Figure``. ``tests/test_lecture_figures.py`` executes the
notebook and checks each: the ``quote`` appears verbatim in the notebook's markdown (a line
break reads as a space), ``value`` is a number the quote writes ("13,500", "2.389e-01",
"eight"), and ``compute(ns)`` (``ns``: the executed notebook's variables; a figure from the
package may ignore it) equals ``value`` within ``rtol`` (and ``atol``). A number typed in prose
that nothing computes is the exception: list it with ``compute=None`` and say why in ``why``.
A quote may carry several figures: list one ``Figure`` per number.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Figure:
    quote: str                                   # verbatim text in the notebook's markdown
    value: float                                 # the number that text states
    compute: Callable[[dict[str, Any]], float] | None
    rtol: float = 1e-3
    atol: float = 0.0
    why: str = ""                                # for compute=None: why no cell computes it


def recorded(bench: str, part: str | None = None, gpu: str = "H100-SXM") -> list[dict]:
    """The rows (of ``part``, where the benchmark's rows have parts) that `gpudl bench BENCH --record`
    kept for ``gpu`` (course/data)."""
    from gpudl import benchmarks

    return benchmarks.recorded_table(bench, gpu, keep=lambda r: part is None or r["part"] == part).rows


def value(bench: str, key: str, gpu: str = "H100-SXM", **match: Any) -> Any:
    """Column ``key`` of the one recorded row of ``bench`` (for ``gpu``) whose columns equal ``match``."""
    rows = [r for r in recorded(bench, gpu=gpu) if all(r.get(k) == v for k, v in match.items())]
    if len(rows) != 1:
        raise LookupError(f"{len(rows)} recorded rows of `gpudl bench {bench}` on {gpu} have {match} (want one)")
    return rows[0][key]


def rung(case: str, key: str = "tflops", gpu: str = "H100-SXM", n: int = 8192) -> float:
    """A rung of lecture 08's precision ladder (`gpudl bench precision --record`) at n^3."""
    return value("precision", key, gpu, part="ladder", case=case, n=n)
