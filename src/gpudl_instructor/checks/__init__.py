"""The hidden cases of every lab's checks: drawn from the instructor's secret, judged against
the references (``gpudl_instructor.references``). One module per lab, ``checks.labNN``.

A test cell calls the course edition's check twice: ``check.NAME(fn)`` (the visible cases, in
``gpudl.grading.labNN``, which the student has) and ``check.NAME(fn, hidden=True)``. The second
call runs the function registered here for that check, ``@hidden(visible.NAME)``: in the
grader's checker during ``gpudl grade`` (the student's kernel never holds it), and in the
instructor's own processes once ``install()`` ran (the tests, the release, the answer hunt).
A hidden check takes the same arguments as the visible one, draws its cases with
``gpudl.grading.rng`` (the student's seed) and usually hands them to the comparison the visible
check uses, with the live references in place of the stored expected values.

Public names: ``hidden``, ``find``, ``install``, ``LABS``.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

from gpudl.grading import boundary

_HIDDEN: dict[str, Callable] = {}


def LABS() -> list[str]:  # noqa: N802 - reads as the constant it stands for
    """The labs with hidden checks here ("lab06", ...)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("lab"))


def hidden(visible: Callable) -> Callable[[Callable], Callable]:
    """Register the decorated function as the hidden cases of the course check ``visible``."""
    name = getattr(visible, "__gpudl_check__", None)
    if name is None:
        raise TypeError(f"{visible!r} is not a check of the course edition (decorated with @exercise)")

    def register(fn: Callable) -> Callable:
        _HIDDEN[name] = fn
        fn.__gpudl_hidden_of__ = name
        return fn

    return register


def find(name: str) -> Callable | None:
    """The hidden check of the course check ``name`` ("gpudl.grading.lab06:sgd_step"), or None."""
    if name not in _HIDDEN:
        module = name.partition(":")[0].rpartition(".")[2]
        if module.startswith("lab"):
            try:
                importlib.import_module(f"{__name__}.{module}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{module}":
                    raise
    return _HIDDEN.get(name)


def install() -> None:
    """Make hidden calls in this process run the checks registered here."""
    boundary.HIDDEN_FINDER = find
