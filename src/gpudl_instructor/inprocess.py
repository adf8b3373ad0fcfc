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


_OPAQUE = frozenset({"globals", "locals", "vars", "exec", "eval", "__import__", "get_ipython"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _scope(nodes: list[ast.AST]) -> tuple[set[str], set[str], set[str]]:
    """(names bound here, names read here, names declared ``global`` here) for the statements of one
    scope; a nested scope adds the names it reads or changes from outside as reads and changes here,
    and the globals it assigns as bindings. Changing ``x.attr`` or ``x[i]`` binds ``x``."""
    binds: set[str] = set()
    reads: set[str] = set()
    declared: set[str] = set()
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            params: set[str] = set()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                binds.add(node.name)
                todo.extend(node.decorator_list)
                todo.extend(getattr(node, "bases", []))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
                todo.extend(node.args.defaults + [d for d in node.args.kw_defaults if d is not None])
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                body = [*node.generators, *((node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,))]
            else:
                body = node.body if isinstance(node.body, list) else [node.body]
            inner_binds, inner_reads, inner_globals = _scope(body)
            own = params | {b for b in inner_binds - inner_globals if not b.startswith("\0")}
            reads |= inner_reads - own
            binds |= inner_binds & inner_globals
            binds |= {b for b in inner_binds if b.startswith("\0") and b[1:] not in own}   # x.attr = ...
            declared |= inner_globals
            continue
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else binds).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            binds.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            base = node.value
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            if isinstance(base, ast.Name):
                reads.add(base.id)                      # read here; changed where it lives (below)
                binds.add(f"\0{base.id}")
        todo.extend(ast.iter_child_nodes(node))
    return binds, reads, declared


def _names(source: str) -> tuple[set[str], set[str]] | None:
    """(names a cell binds or changes at its top level, names it reads from there) by its syntax, or
    None when that cannot be told (it does not parse, or reaches names in ways no syntax tree shows:
    ``globals()``, ``exec``, ``%magic``). A function's own parameters and locals are its own;
    assigning to an attribute or item of a name counts as changing that name."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if any(isinstance(n, ast.Name) and n.id in _OPAQUE for n in ast.walk(tree)):
        return None
    binds, reads, declared = _scope(tree.body)
    changed = {b[1:] for b in binds if b.startswith("\0")}
    return {b for b in binds if not b.startswith("\0")} | changed | declared, reads


def to_run(nb: nbformat.NotebookNode, changed: set[str]) -> set[int] | None:
    """The indices of the code cells of ``nb`` to run once the cells ``changed`` (grade ids) differ from a
    notebook that scores full marks: the test cells whose run may differ (those that read a name a changed
    cell binds or changes, or a name bound by a cell that does, and so on), and every earlier cell that
    binds a name one of the cells to run reads. A demo cell that no such test cell needs (a timing sweep, a
    plot) does not run. None when a cell's names cannot be told, so every cell runs."""
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    names = [_names(c.source) for _, c in code]
    if any(n is None for n in names):
        return None
    tainted: set[str] = set()
    cells: set[int] = set()
    for (index, cell), (binds, reads) in zip(code, names):
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if nbg.get("grade_id") in changed or reads & tainted:
            tainted |= binds
            if nbg.get("grade"):
                cells.add(index)
    # Before the last of them, every cell that binds a name a cell to run reads, wherever it stands: a
    # function reads its globals when called, so a helper defined after it counts too.
    last = max(cells, default=-1)
    read = set().union(*(reads for (index, _), (_, reads) in zip(code, names) if index in cells))
    grew = True
    while grew:
        grew = False
        for (index, _), (binds, reads) in zip(code, names):
            if index < last and index not in cells and binds & read:
                cells.add(index)
                read |= reads
                grew = True
    return cells


def autograde(nb: nbformat.NotebookNode, *, seed: str, cell_timeout: float = 180.0,
              changed_from_full_marks: set[str] | None = None) -> dict[str, float]:
    """Scores of the graded cells {grade_id: points earned} for one run of ``nb``.

    ``changed_from_full_marks``: ``nb`` is a notebook that scores full marks (the solution) with these
    cells changed (a mutant): only the cells ``to_run`` names run, and a test cell that no changed
    cell can reach through the names it reads keeps its full points without running."""
    scores: dict[str, float] = {}
    namespace: dict[str, Any] = {"__name__": "__main__"}
    run = next(_RUNS)
    reach = to_run(nb, changed_from_full_marks) if changed_from_full_marks is not None else None

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
                if reach is not None and index not in reach:
                    if nbg.get("grade"):
                        scores[nbg["grade_id"]] = float(nbg["points"])
                    continue
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
