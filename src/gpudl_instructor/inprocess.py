"""Run a notebook inside this process: ``autograde`` scores test cells the way nbgrader does,
``execute`` runs the cells and reports the first that fails.

For the mutant bank (tests), the release's record of the visible cases' expected values
(``gpudl_instructor.expected``) and the answer hunt: each mutant's notebook runs here, in a test worker that has
already imported torch, triton and gpudl, instead of in a fresh nbgrader process and
kernel (which costs several seconds per mutant before a cell runs). The solution and the
release are always graded by real nbgrader, and ``test_labs`` cross-checks this grader
against nbgrader on one mutant per lab; ``GPUDL_MUTANTS=nbgrader`` grades every mutant
with nbgrader instead.

Scoring follows ``nbgrader.utils.determine_grade`` after the ``IgnorePattern`` preprocessor:
a graded code cell that raises, or writes to stderr text the pattern does not match, scores
0; one whose last expression is a number scores that number (partial credit); any other
scores full points. Cells run in order in one namespace, as in a kernel; a cell that runs
past ``cell_timeout`` is interrupted, as nbgrader interrupts the kernel.
"""
from __future__ import annotations

import ast
import contextlib
import io
import itertools
import linecache
import os
import re
import signal
from typing import Any

import nbformat

from .nbgrader_setup import IGNORE_STDERR, SEED_ENV


_RUNS = itertools.count()


class _CellTimeout(BaseException):
    """Raised in the running cell at the per-cell limit (a BaseException, like KeyboardInterrupt)."""


def _compile_cell(source: str, name: str):
    """(statements, last expression or None): the last expression's value is the cell's result.

    The source goes into ``linecache`` under ``name``, as IPython does, so that ``inspect``
    finds it: ``@triton.jit`` reads the source of the function it decorates.
    """
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    tree = ast.parse(source, filename=name)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    return compile(tree, name, "exec"), (compile(last, name, "eval") if last is not None else None)


def _partial(value: Any, points: float) -> float:
    """nbgrader's ``get_partial_grade`` on the result's text: a text that parses as a float in
    [0, points] is the score; above the points is an error (0); anything else full points."""
    try:
        score = float(repr(value))
    except ValueError:
        return points
    if score > points:
        return 0.0
    return score if score >= 0.0 else points


@contextlib.contextmanager
def _isolated_state():
    """Restore what a notebook may change in this process: environment, torch flags, figures."""
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    env = dict(os.environ)
    np_err = np.geterr()
    flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.backends.cudnn.benchmark, torch.get_num_threads())
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(env)
        np.seterr(**np_err)
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
         torch.backends.cudnn.benchmark) = flags[:3]
        torch.set_num_threads(flags[3])
        plt.close("all")


def autograde(nb: nbformat.NotebookNode, *, seed: str, cell_timeout: float = 180.0) -> dict[str, float]:
    """Scores of the graded cells {grade_id: points earned} for one run of ``nb``."""
    scores: dict[str, float] = {}
    namespace: dict[str, Any] = {"__name__": "__main__"}
    run = next(_RUNS)

    def on_alarm(signum, frame):
        raise _CellTimeout(f"cell ran past {cell_timeout} s")

    with _isolated_state():
        os.environ["NBGRADER_EXECUTION"] = "autograde"
        os.environ[SEED_ENV] = seed
        previous = signal.signal(signal.SIGALRM, on_alarm)
        try:
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                nbg = cell.get("metadata", {}).get("nbgrader", {})
                err, failed, result = io.StringIO(), False, None
                try:
                    body, last = _compile_cell(cell.source, f"<gpudl-run{run}-cell{index}>")
                    signal.setitimer(signal.ITIMER_REAL, cell_timeout)
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                        exec(body, namespace)
                        if last is not None:
                            result = eval(last, namespace)
                except (Exception, _CellTimeout, KeyboardInterrupt, SystemExit):
                    failed = True
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                if nbg.get("grade"):
                    points = float(nbg["points"])
                    noisy = err.getvalue() and not re.search(IGNORE_STDERR, err.getvalue())
                    scores[nbg["grade_id"]] = 0.0 if failed or noisy else (
                        _partial(result, points) if result is not None else points)
        finally:
            signal.signal(signal.SIGALRM, previous)
    return scores


def execute(nb: nbformat.NotebookNode, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every code cell of ``nb`` in order in ``namespace`` (quietly, as nbgrader's validate would:
    ``NBGRADER_EXECUTION=validate``); return the namespace. A cell that raises stops the run with a
    ``RuntimeError`` naming the cell and the error."""
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    run = next(_RUNS)
    with _isolated_state():
        os.environ["NBGRADER_EXECUTION"] = "validate"
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            body, last = _compile_cell(cell.source, f"<gpudl-run{run}-cell{index}>")
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(body, namespace)
                    if last is not None:
                        eval(last, namespace)
            except Exception as exc:
                cid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", f"cell {index}")
                raise RuntimeError(f"{cid} failed: {type(exc).__name__}: {exc}") from exc
    return namespace
