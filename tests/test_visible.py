"""Visible tests teach: a mistake of the mutant bank fails the visible cases a student runs.

A student's copy of a lab has its test cells without the hidden region, so what a student
learns before grading is what the visible cases say. For every mutant, this test plants it into
a copy of the solution notebook whose test cells have their hidden regions removed, grades it
in-process (``inprocess.autograde``), and requires that the exercise it breaks loses points.
The only exceptions are listed in ``VISIBLE_PASSES``, each with the reason no visible case can
catch it; the list must stay exact (a listed mutant that starts failing the visible cases must
leave the list) and short (at most 2% of the bank), and no pitfall an exercise's text names may
be on it.

To stay quick, a mutant's notebook keeps only what its exercise's test cells need: the setup
cell, every solution cell, locked cells that define functions (a launcher the lab provides),
and the test cells of the exercise; ``test_pruned_solution_passes_every_visible_cell`` proves
that this pruning loses nothing the tests need.
"""
from __future__ import annotations

import ast
import copy
import re

import pytest

import inprocess
from conftest import ROOT, all_mutants, lab_names
from gpudl import notebooks

LABS = lab_names()
MUTANTS = all_mutants()
pytestmark = pytest.mark.slow

# Mutants that pass the visible cases of their exercise, and why no visible case can catch them.
VISIBLE_PASSES: dict[str, str] = {
}

_HIDDEN = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.S)
_SOLUTIONS: dict[str, object] = {}


def _solution(lab: str):
    if lab not in _SOLUTIONS:
        _SOLUTIONS[lab] = notebooks.read(ROOT / "solutions" / lab / f"{lab}.ipynb")
    return _SOLUTIONS[lab]


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _defines_functions(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in tree.body)


def visible_notebook(lab: str, tests: set[str] | None = None, cell: str | None = None, source: str | None = None):
    """The solution as a student's visible tests see it: hidden regions removed, ``cell``'s
    source replaced by ``source``, and only what the test cells ``tests`` (default: all) need."""
    nb = copy.deepcopy(_solution(lab))
    if cell is not None:
        nb = notebooks.replace_source(nb, cell, source)
    kept = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        meta = _meta(c)
        if meta.get("grade"):
            if tests is None or meta["grade_id"] in tests:
                c.source = _HIDDEN.sub("", c.source)
                kept.append(c)
        elif meta.get("solution") or meta.get("grade_id") == "setup" or (meta.get("locked") and _defines_functions(c.source)):
            kept.append(c)
    last = max(i for i, c in enumerate(kept) if _meta(c).get("grade"))
    nb.cells = kept[:last + 1]
    return nb


def _planted_source(mutant) -> str:
    return mutant.planted(notebooks.find_cell(_solution(mutant.lab), mutant.cell).source)


def test_the_allow_list_is_short_and_names_real_mutants():
    ids = {m.id for m in MUTANTS}
    assert set(VISIBLE_PASSES) <= ids, f"unknown mutants listed: {sorted(set(VISIBLE_PASSES) - ids)}"
    assert len(VISIBLE_PASSES) <= 0.02 * len(MUTANTS), (
        f"{len(VISIBLE_PASSES)} of {len(MUTANTS)} mutants pass the visible tests: strengthen the visible cases")
    assert all(reason.strip() for reason in VISIBLE_PASSES.values())


@pytest.mark.parametrize("lab", LABS)
def test_pruned_solution_passes_every_visible_cell(lab):
    nb = visible_notebook(lab)
    points = notebooks.graded_cells(nb)
    assert inprocess.autograde(nb, seed="visible") == points


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_visible_cases_catch_the_mutant(mutant):
    nb = visible_notebook(mutant.lab, set(mutant.fails), mutant.cell, _planted_source(mutant))
    points = notebooks.graded_cells(nb)
    scores = inprocess.autograde(nb, seed="visible")
    caught = any(scores[cell] < points[cell] for cell in mutant.fails)
    if mutant.id in VISIBLE_PASSES:
        assert not caught, (f"{mutant.id} is listed as passing the visible cases, but they catch it now: "
                            "take it off VISIBLE_PASSES")
    else:
        assert caught, (f"{mutant.description!r} ({mutant.id}) passes the visible cases of "
                        f"{', '.join(mutant.fails)}: add a visible case that catches it")
