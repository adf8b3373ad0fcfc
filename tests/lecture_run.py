"""Execute a lecture notebook in this process, once per test session, and keep what it computed.

``tests/test_course.py`` (every lecture notebook runs without an error) and
``tests/test_lecture_figures.py`` (the figures a notebook's prose quotes are the ones its cells
compute) both need an executed notebook; ``executed(path)`` runs each one once per process and
caches the result, so the two share one execution. (Under ``pytest -n``, the tests of one
notebook carry the same ``xdist_group`` and ``make test`` passes ``--dist loadgroup``, so they
land on the same worker.)

The code cells run in order in one namespace, as in a kernel, with the cell mechanics of
``tests/inprocess.py`` (each cell's source in ``linecache`` so that ``inspect`` and
``@triton.jit`` find it; the last expression evaluated), headless (``MPLBACKEND=Agg``), in a
scratch working directory, and with the process state a notebook may change (environment, torch
flags, figures) restored afterwards, and with the course edition alone: the instructor's part
(``gpudl_instructor``: references, checks, grader) cannot be imported while a lecture runs, as
in a student's hand-out. The first cell that raises ends the run; the result says which cell and
why. A Jupyter kernel is not involved: ``gpudl run-labs`` (and its test) executes
the notebooks with nbclient.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import io
import os
import re
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from gpudl_instructor.inprocess import _compile_cell, _isolated_state

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "course"


@dataclass
class ExecutedNotebook:
    """What one run of a lecture notebook left behind."""

    path: Path
    namespace: dict[str, Any]
    markdown: str                           # every markdown cell, joined by blank lines
    stdout: list[str] = field(default_factory=list)   # per code cell, in order
    error: str | None = None                # "cell N: Type: message" of the first failing cell
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return self.path.name


def markdown_text(nb: nbformat.NotebookNode) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def normalize_space(text: str) -> str:
    """Runs of whitespace (a line break inside a quoted sentence) read as one space."""
    return re.sub(r"\s+", " ", text).strip()


class _CourseEditionOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "gpudl_instructor":
            raise ImportError(f"{name} is the instructor's part: a lecture runs in the course edition alone")
        return None


@contextlib.contextmanager
def course_edition_only():
    """Neither an imported module of the instructor's part nor a new import of one, while inside."""
    kept = {name: mod for name, mod in sys.modules.items() if name.split(".")[0] == "gpudl_instructor"}
    for name in kept:
        del sys.modules[name]
    blocker = _CourseEditionOnly()
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        sys.meta_path.remove(blocker)
        sys.modules.update(kept)


def execute(path: Path) -> ExecutedNotebook:
    """Run every code cell of ``path`` in one fresh namespace; stop at the first error."""
    nb = nbformat.read(str(path), as_version=4)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    run = ExecutedNotebook(path, namespace, markdown_text(nb))
    start = time.perf_counter()
    cwd = os.getcwd()
    with _isolated_state(), course_edition_only(), tempfile.TemporaryDirectory(prefix=f"{path.stem}-") as scratch:
        os.environ["MPLBACKEND"] = "Agg"
        import matplotlib
        matplotlib.use("Agg")
        os.chdir(scratch)
        try:
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                out = io.StringIO()
                try:
                    body, last = _compile_cell(cell.source, f"<{path.stem}-cell{index}>")
                    with contextlib.redirect_stdout(out):
                        exec(body, namespace)
                        if last is not None:
                            eval(last, namespace)
                except Exception as exc:  # noqa: BLE001 - reported with the cell it came from
                    tb = traceback.format_exception_only(type(exc), exc)[-1].strip()
                    run.error = f"cell {index}: {tb}"
                    run.stdout.append(out.getvalue())
                    break
                run.stdout.append(out.getvalue())
        finally:
            os.chdir(cwd)
    run.seconds = time.perf_counter() - start
    return run


_CACHE: dict[Path, ExecutedNotebook] = {}


def executed(path: Path) -> ExecutedNotebook:
    """``execute(path)``, once per process."""
    path = Path(path).resolve()
    if path not in _CACHE:
        _CACHE[path] = execute(path)
    return _CACHE[path]
