"""The figures a lecture notebook's prose quotes are the ones its cells (or gpudl) compute.

For every table ``tests/figures/<notebook stem>.py`` (format in ``tests/figures/__init__.py``)
the notebook ``course/<stem>.ipynb`` is executed once per session (``tests/lecture_run.py``,
shared with ``test_course.py``) and each ``Figure`` is checked:

- its ``quote`` appears in the notebook's markdown (verbatim, a line break reading as a space);
- its ``value`` is a number written in the quote, so the table cannot drift from the prose;
- ``compute(namespace)`` equals ``value`` within ``rtol``/``atol``; ``compute=None`` needs a ``why``.

A failure names the notebook and the quote. The six notebooks of round 1 must have a table;
new units add theirs as they are written.
"""
from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path
from typing import Iterable

import nbformat
import pytest

from figures import Figure
from gpudl import notebooks
from lecture_run import COURSE, ExecutedNotebook, execute, executed, normalize_space

FIGURES = Path(__file__).resolve().parent / "figures"
TABLES = sorted(p for p in FIGURES.glob("*.py") if p.name != "__init__.py")
MUST_HAVE_A_TABLE = ("01_performance_basics", "02_measuring_flops", "03_gemm_blocking",
                     "05_layouts_and_cudnn", "06_lstm_bptt", "07_attention")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
          "sixteen seventeen eighteen nineteen twenty").split()
_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)


def load_table(path: Path) -> list[Figure]:
    spec = importlib.util.spec_from_file_location(f"figures_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    figures = getattr(module, "FIGURES", None)
    if not isinstance(figures, list) or not all(isinstance(f, Figure) for f in figures):
        raise TypeError(f"{path.name}: FIGURES must be a list of tests.figures.Figure")
    return figures


def numbers_in(quote: str) -> list[float]:
    """The numbers written in a quote: "13,500 TFLOP/s" -> [13500.0]; "8-16x" -> [8.0, 16.0];
    "2.389e-01" -> [0.2389]; "a factor of eight" -> [8.0]."""
    return ([float(m.group().replace(",", "")) for m in _NUMBER.finditer(quote)]
            + [float(_WORDS.index(m.group().lower())) for m in _WORD.finditer(quote)])


def table_problems(name: str, figures: Iterable[Figure]) -> list[str]:
    """What is wrong with a table itself, before anything runs."""
    problems = []
    for f in figures:
        where = f"{name}: figure {f.quote!r}"
        if not any(math.isclose(abs(f.value), n, rel_tol=1e-12) for n in numbers_in(f.quote)):
            problems.append(f"{where}: its value {f.value:g} is not a number the quote writes "
                            f"({numbers_in(f.quote) or 'none'})")
        if f.compute is None and not f.why.strip():
            problems.append(f"{where}: compute=None needs a reason in `why`")
        if f.rtol < 0 or f.atol < 0:
            problems.append(f"{where}: tolerances must be non-negative")
    return problems


def figure_problems(run: ExecutedNotebook, figures: Iterable[Figure]) -> list[str]:
    """Each figure's quote is in the markdown and its computed value is the value quoted."""
    if run.error:
        return [f"{run.name} did not run to the end: {run.error}"]
    text = normalize_space(run.markdown)
    problems = []
    for f in figures:
        where = f"{run.name}: {f.quote!r}"
        if normalize_space(f.quote) not in text:
            problems.append(f"{where} is not in the notebook's markdown (the prose changed: update the table)")
        if f.compute is None:
            continue
        try:
            got = float(f.compute(run.namespace))
        except Exception as exc:  # noqa: BLE001 - reported with the figure
            problems.append(f"{where}: computing the figure raised {type(exc).__name__}: {exc}")
            continue
        if not math.isclose(got, f.value, rel_tol=f.rtol, abs_tol=f.atol):
            problems.append(f"{where} states {f.value:g}, the notebook computes {got:.6g} "
                            f"(rtol {f.rtol:g}, atol {f.atol:g})")
    return problems


def _group(stem: str):
    return pytest.mark.xdist_group(f"lecture-{stem}")   # with test_course's run of the same notebook


def _params(paths):
    return [pytest.param(p, id=p.stem, marks=_group(p.stem)) for p in paths]


def test_the_round_one_notebooks_have_a_table():
    tables = {p.stem for p in TABLES}
    assert not set(MUST_HAVE_A_TABLE) - tables, f"no tests/figures table for {sorted(set(MUST_HAVE_A_TABLE) - tables)}"
    orphans = sorted(t for t in tables if not (COURSE / f"{t}.ipynb").exists())
    assert not orphans, f"tables without a notebook course/<stem>.ipynb: {orphans}"


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.stem)
def test_the_table_is_well_formed(table):
    figures = load_table(table)
    assert figures, f"{table.name}: FIGURES is empty"
    problems = table_problems(f"{table.stem}.ipynb", figures)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("table", _params(TABLES))
def test_quoted_figures_are_computed(table):
    run = executed(COURSE / f"{table.stem}.ipynb")
    problems = figure_problems(run, load_table(table))
    assert not problems, f"{len(problems)} quoted figure(s) of {run.name} fail:\n" + "\n".join(problems)


# The mechanism itself, on a tiny synthetic notebook.

def _tiny_notebook(tmp_path: Path, code: str = "answer = 6 * 7\n") -> Path:
    nb = notebooks.from_py("# %% [markdown]\n# # A tiny lecture\n#\n# The answer is **42**, and half of it\n"
                           f"# is 21.\n\n# %% [code]\n{code}")
    path = tmp_path / "99_tiny.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_the_mechanism_passes_true_figures_and_names_drifted_ones(tmp_path):
    run = execute(_tiny_notebook(tmp_path))
    true = [Figure("The answer is **42**", 42, lambda ns: ns["answer"]),
            Figure("half of it is 21", 21, lambda ns: ns["answer"] / 2),          # across a line break
            Figure("is **42**", 42, None, why="typed")]
    assert run.error is None and figure_problems(run, true) == []

    drifted = Figure("The answer is **42**", 42, lambda ns: ns["answer"] + 1)
    [problem] = figure_problems(run, [drifted])
    assert "99_tiny.ipynb" in problem and "'The answer is **42**'" in problem and "computes 43" in problem

    missing = Figure("The answer is **43**", 43, lambda ns: 43)
    [problem] = figure_problems(run, [missing])
    assert "99_tiny.ipynb" in problem and "'The answer is **43**'" in problem and "not in the notebook" in problem

    close = Figure("The answer is **42**", 42, lambda ns: 42.03, rtol=1e-3)
    assert figure_problems(run, [close]) == []
    assert figure_problems(run, [Figure("The answer is **42**", 42, lambda ns: 42.1, rtol=1e-3)])

    broken = Figure("half of it is 21", 21, lambda ns: ns["no_such_variable"])
    [problem] = figure_problems(run, [broken])
    assert "99_tiny.ipynb" in problem and "KeyError" in problem


def test_the_mechanism_rejects_malformed_tables_and_notebooks_that_fail(tmp_path):
    assert table_problems("x.ipynb", [Figure("costs 13,500 TFLOP/s", 13500, None, why="measured")]) == []
    [problem] = table_problems("x.ipynb", [Figure("The answer is **42**", 41, lambda ns: 41)])
    assert "x.ipynb" in problem and "'The answer is **42**'" in problem and "41" in problem
    [problem] = table_problems("x.ipynb", [Figure("The answer is **42**", 42, None)])
    assert "needs a reason" in problem

    run = execute(_tiny_notebook(tmp_path, code="answer = 6 * 7\nraise ValueError('broken cell')\n"))
    [problem] = figure_problems(run, [Figure("The answer is **42**", 42, lambda ns: ns["answer"])])
    assert "99_tiny.ipynb did not run to the end" in problem and "ValueError: broken cell" in problem
