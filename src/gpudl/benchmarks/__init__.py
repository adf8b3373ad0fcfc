"""``gpudl bench NAME``: one module per benchmark, and the registry the CLI and run-labs share.

A benchmark is a module ``gpudl/benchmarks/NAME.py`` with

- a docstring whose first line says what it measures (``gpudl bench --list`` shows it);
- ``add_arguments(parser)``: its own options (the registry adds ``--quick`` to every one:
  sizes for a CPU, a few seconds, what ``gpudl run-labs --device cpu`` and the tests run);
- ``run(args) -> Table``: the measurements as a ``Table`` (title, rows as dicts, notes, and
  figures as {file stem: matplotlib Figure}).

The registry finds the modules by listing this package, so adding a benchmark is adding a
file; a module whose name starts with ``_`` is not a benchmark. Benchmarks import the concept
modules they measure and time with ``gpudl.timing``; no concept module imports a benchmark.

Public names: ``names``, ``load``, ``summary``, ``parser``, ``run``, ``Table``.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
from types import ModuleType
from typing import Sequence

from ..table import Table


# Benchmarks that live outside the course edition (the instructor's `gpudl bench grading`),
# registered by their package when it is imported: name -> module.
EXTRA: dict[str, str] = {}


def _modules() -> dict[str, str]:
    found = {m.name: f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
    return {**found, **EXTRA}


def names() -> list[str]:
    """Every benchmark's name, sorted."""
    return sorted(_modules())


def load(name: str) -> ModuleType:
    """The module of benchmark ``name``; a wrong name says which exist."""
    mods = _modules()
    if name not in mods:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(names())}")
    return importlib.import_module(mods[name])


def summary(name: str) -> str:
    """The first line of the benchmark's docstring."""
    doc = (load(name).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def parser(name: str) -> argparse.ArgumentParser:
    """The benchmark's argument parser: ``--quick`` and the module's own options."""
    module = load(name)
    p = argparse.ArgumentParser(prog=f"gpudl bench {name}", description=module.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="CPU-sized problems, a few seconds")
    module.add_arguments(p)
    return p


def run(name: str, argv: Sequence[str] = ()) -> Table:
    """Parse ``argv`` with the benchmark's options and run it."""
    args = parser(name).parse_args(list(argv))
    return load(name).run(args)


__all__ = ["names", "load", "summary", "parser", "run", "Table"]
