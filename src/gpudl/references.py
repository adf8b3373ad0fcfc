"""Marking the package's reference implementations, so graded code cannot call them.

A function decorated with ``@reference`` behaves as usual, except inside
``gpudl.grading.guard(fn)``: there, calling it from code outside the package raises
``ReferenceUsedError``, because the exercise being graded asks the student to write that
function. "Outside the package" is judged by where the calling code was compiled from (its
file must lie inside the installed package's directory), not by its module's ``__name__``,
which any code can set. The wrapper keeps no ``__wrapped__``; the function underneath is still
reachable (through the wrapper's ``__closure__``), so while a guard forbids a reference,
``gpudl.grading.guard`` also watches calls of the function underneath (see ``code_of``).
This module imports nothing from the package, so every module can use it.

Public names: ``reference``, ``GradingError``, ``ReferenceUsedError``, ``in_package``,
``code_of``, ``WRAPPER_CODE``.
"""
from __future__ import annotations

import functools
import inspect
import os
import sys
from types import CodeType, FrameType
from typing import Callable


class GradingError(AssertionError):
    """A check failed; the message says what was expected and what was found."""


class ReferenceUsedError(GradingError):
    """Graded code called the reference it is meant to reimplement."""


forbidden_now: set[int] = set()     # ids of reference wrappers forbidden at this moment
labels: list[str] = []              # what is being graded, for the message

PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__)) + os.sep
# Folders whose code counts as the package's: the course edition, and the instructor's part when
# it is installed (it adds its own folder when imported; the course edition never imports it).
TRUSTED_DIRS: list[str] = [PACKAGE_DIR]
_IN_PACKAGE: dict[str, bool] = {}
_CODE_OF: dict[int, CodeType] = {}  # id(wrapper) -> the code of the function underneath


def trust(folder: str) -> None:
    """Count code compiled from files under ``folder`` as the package's own."""
    folder = os.path.realpath(folder) + os.sep
    if folder not in TRUSTED_DIRS:
        TRUSTED_DIRS.append(folder)
        _IN_PACKAGE.clear()


def in_package(code: CodeType) -> bool:
    """Whether ``code`` was compiled from a file inside the installed package's directory (or
    another folder the package trusts: the instructor's part)."""
    name = code.co_filename
    known = _IN_PACKAGE.get(name)
    if known is None:
        try:
            real = os.path.realpath(name)
            known = real.startswith(tuple(TRUSTED_DIRS)) and os.path.isfile(real)
        except (OSError, ValueError):
            known = False
        _IN_PACKAGE[name] = known
    return known


def code_of(wrapper: Callable) -> CodeType | None:
    """The code object of the function underneath a ``@reference`` wrapper."""
    return _CODE_OF.get(id(wrapper))


def _refused(fn: Callable) -> ReferenceUsedError:
    label = labels[-1] if labels else "this exercise"
    return ReferenceUsedError(
        f"your code calls {fn.__module__}.{fn.__qualname__}, the package's reference for "
        f"{label}. The exercise is to write it yourself: replace that call with your own code.")


def reference(fn: Callable) -> Callable:
    """Mark ``fn`` as the reference of an exercise (see the module docstring)."""

    def wrapper(*args, **kwargs):
        # Only calls from outside the package count: the package's own functions may use
        # each other (roofline calls hardware.peak_flops) while an exercise is graded.
        if forbidden_now and id(wrapper) in forbidden_now and not in_package(sys._getframe(1).f_code):
            raise _refused(fn)
        return fn(*args, **kwargs)

    functools.update_wrapper(wrapper, fn)
    del wrapper.__wrapped__             # no handle on the function underneath
    try:
        wrapper.__signature__ = inspect.signature(fn)      # help() still shows the real arguments
    except (TypeError, ValueError):
        pass
    wrapper.__gpudl_reference__ = True
    _CODE_OF[id(wrapper)] = fn.__code__
    return wrapper


# Every wrapper runs this code: a call of a reference's function underneath made from it went
# through the wrapper's own check.
WRAPPER_CODE: CodeType = reference(lambda: None).__code__


def refuse_under_a_guard(what: str, caller: FrameType) -> None:
    """While a check's guard is open, the code it watches may not run code in another process
    through the package (``what`` starts one), where the guard would not see it; the package's own
    checks may (``caller``: the frame that called ``what``)."""
    guards = sys.modules.get("gpudl.grading.forbidden")     # no guard was ever opened without it
    if guards is not None:
        guards.refuse_another_process(what, caller)
