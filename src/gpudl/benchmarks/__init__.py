"""``gpudl bench NAME``: one module per benchmark, and the registry the CLI and run-labs share.

A benchmark is a module ``gpudl/benchmarks/NAME.py`` with

- a docstring whose first line says what it measures (``gpudl bench --list`` shows it);
- ``add_arguments(parser)``: its own options (the registry adds ``--quick`` to every one:
  sizes for a CPU, a few seconds, what ``gpudl run-labs --device cpu`` and the tests run; and
  ``--record [PATH]``: keep a GPU run's rows, with device, date and command, in
  ``course/data/bench_NAME.json`` for the lectures, ``_record``);
- ``run(args) -> Table``: the measurements as a ``Table`` (title, rows as dicts, notes, and
  figures as {file stem: matplotlib Figure}).

The registry finds the modules by listing this package, so adding a benchmark is adding a
file; a module whose name starts with ``_`` is not a benchmark. Benchmarks import the concept
modules they measure and time with ``gpudl.timing``; no concept module imports a benchmark.

Public names: ``names``, ``load``, ``summary``, ``parser``, ``run``, ``Table``, and the records the
lectures show: ``recorded(name)``, ``recorded_table(name, gpu, keep=, columns=)``.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
from types import ModuleType
from typing import Sequence

from ..table import Table
from . import _record
from ._record import recorded, recorded_table


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
    p.add_argument("--record", nargs="?", const="", default=None, metavar="PATH",
                   help=f"keep a GPU run's rows, with device, date and command, for the lectures (default "
                        f"{_record.path_of(name).relative_to(_record.DATA_DIR.parents[1])})")
    module.add_arguments(p)
    return p


def run(name: str, argv: Sequence[str] = ()) -> Table:
    """Parse ``argv`` with the benchmark's options and run it; with ``--record``, keep the rows
    of a run on a GPU (a run without one records nothing, and its notes say so)."""
    args = parser(name).parse_args(list(argv))
    table = load(name).run(args)
    if args.record is not None:
        from ..hardware import cuda_available

        path = args.record or _record.path_of(name)
        if cuda_available() and table.rows:
            _record.record(name, table, list(argv), path)
            table.notes.append(f"rows recorded in {path}")
        else:
            table.notes.append("nothing recorded: --record keeps the rows of a run on a GPU, and this run "
                               + ("had no GPU" if table.rows else "had no rows"))
    return table


__all__ = ["names", "load", "summary", "parser", "run", "Table", "recorded", "recorded_table"]
