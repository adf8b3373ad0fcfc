"""Marking the package's reference implementations, so graded code cannot call them.

A function decorated with ``@reference`` behaves as usual, except inside
``gpudl.grading.guard(fn)``: there, calling it from outside the package raises
``ReferenceUsedError``, because the exercise being graded asks the student to write that
function. This module imports
nothing from the package, so every module can use it.
"""
from __future__ import annotations

import functools
import sys
from typing import Callable


class GradingError(AssertionError):
    """A check failed; the message says what was expected and what was found."""


class ReferenceUsedError(GradingError):
    """Graded code called the reference it is meant to reimplement."""


forbidden_now: set[int] = set()     # ids of reference wrappers forbidden at this moment
labels: list[str] = []              # what is being graded, for the message


def reference(fn: Callable) -> Callable:
    """Mark ``fn`` as the reference of an exercise (see the module docstring)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        # Only calls from outside the package count: the package's own functions may use
        # each other (roofline calls hardware.peak_flops) while an exercise is graded.
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if id(wrapper) in forbidden_now and not caller.startswith("gpudl."):
            label = labels[-1] if labels else "this exercise"
            raise ReferenceUsedError(
                f"your code calls {fn.__module__}.{fn.__qualname__}, the package's reference for "
                f"{label}. The exercise is to write it yourself: replace that call with your own code.")
        return fn(*args, **kwargs)

    wrapper.__gpudl_reference__ = True
    return wrapper
