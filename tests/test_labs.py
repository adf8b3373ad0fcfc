"""Every lab under solutions/: the release is what nbgrader makes of the solution, the
solution autogrades to full marks, the release to zero, and every mutant loses exactly the
points of the exercise it breaks.

The solution and the release are graded by nbgrader itself. The mutants are graded in this
process by ``inprocess.autograde`` (nbgrader's scoring rule, without a kernel per mutant),
which ``test_in_process_grading_agrees_with_nbgrader`` checks against nbgrader on one mutant
per lab; ``GPUDL_MUTANTS=nbgrader pytest tests/test_labs.py`` grades every mutant with nbgrader.
"""
from __future__ import annotations

import json
import os

import pytest

import inprocess
from gpudl import notebooks
from gpudl_instructor import pipeline
from conftest import ROOT, SECRET, all_mutants, lab_names

LABS = lab_names()
MUTANTS = all_mutants()
pytestmark = pytest.mark.slow


def _outputs(cell):
    return cell.get("outputs", []) if cell.cell_type == "code" else []


@pytest.mark.parametrize("lab", LABS)
def test_release_is_what_nbgrader_generates(lab, lab_course):
    course = lab_course(lab)
    committed = ROOT / "labs" / lab / f"{lab}.ipynb"
    assert committed.is_file(), f"labs/{lab}/{lab}.ipynb is missing: run `gpudl release {lab}`"
    assert json.loads(committed.read_text()) == json.loads(course.released_path.read_text()), (
        f"labs/{lab} is out of date with solutions/{lab}: run `gpudl release {lab}` and commit the result")
    extra = {p.name for p in committed.parent.iterdir()} ^ {p.name for p in course.released_path.parent.iterdir()}
    assert not extra, f"labs/{lab} and the generated release differ in files: {sorted(extra)}"


@pytest.mark.parametrize("lab", LABS)
def test_solution_scores_full_marks_quietly(lab, lab_course):
    course = lab_course(lab)
    result, graded = course.autograde("solution", course.solution_path)
    assert result.graded, result.reason
    assert result.scores == course.points, f"lost points: {result.notes}"
    for cell in graded.cells:
        for out in _outputs(cell):
            gid = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
            assert out.output_type != "error", f"cell {gid} raised {out.ename}: {out.evalue}"
            if cell.metadata.get("nbgrader", {}).get("grade"):
                assert not (out.output_type == "stream" and out.name == "stderr"), (
                    f"test cell {gid} writes to stderr (nbgrader scores that 0): {out.text[:300]}")


@pytest.mark.parametrize("lab", LABS)
def test_release_scores_zero(lab, lab_course):
    course = lab_course(lab)
    result, _ = course.autograde("release", course.released_path)
    assert result.graded, result.reason
    assert result.score == 0, f"the unanswered release earns {result.scores}"


@pytest.mark.parametrize("lab", LABS)
def test_every_exercise_has_mutants(lab, lab_course):
    course = lab_course(lab)
    solution_cells = [c.metadata.nbgrader["grade_id"] for c in course.solution.cells
                      if c.metadata.get("nbgrader", {}).get("solution") and not c.metadata.nbgrader.get("grade")]
    counts = {cell: sum(m.cell == cell for m in MUTANTS if m.lab == lab) for cell in solution_cells}
    thin = {c: n for c, n in counts.items() if n < 2}
    assert not thin, f"exercises of {lab} with fewer than two mutants: {thin}"
    for m in (m for m in MUTANTS if m.lab == lab):
        assert m.cell in solution_cells, f"mutant {m.name} replaces unknown solution cell {m.cell!r}"
        assert set(m.fails) <= set(course.points), f"mutant {m.name} names unknown test cells {m.fails}"


def _planted(mutant, course):
    solution_cell = notebooks.find_cell(course.solution, mutant.cell).source
    return notebooks.replace_source(course.solution, mutant.cell, mutant.planted(solution_cell))


def _scores(mutant, course, *, with_nbgrader: bool) -> dict[str, float]:
    student = f"m-{mutant.name}"[:60]
    if with_nbgrader:
        result, _ = course.autograde(student, _planted(mutant, course))
        assert result.graded, result.reason
        return result.scores
    return inprocess.autograde(_planted(mutant, course), seed=pipeline.student_seed(SECRET, mutant.lab, student),
                               changed_from_full_marks={mutant.cell})


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
@pytest.mark.usefixtures("quick_deadlocks")
def test_mutant_loses_its_exercise_points_only(mutant, lab_course):
    course = lab_course(mutant.lab)
    scores = _scores(mutant, course, with_nbgrader=os.environ.get("GPUDL_MUTANTS") == "nbgrader")
    for cell, points in course.points.items():
        got = scores.get(cell, 0.0)
        if cell in mutant.fails:
            assert got < points, f"{mutant.description!r}: {cell} still earns {got}/{points}"
        else:
            assert got == points, f"{mutant.description!r} also costs {cell} ({got}/{points})"


def test_a_mutant_runs_the_test_cells_its_change_reaches_and_what_they_read():
    import nbformat

    def cell(source, grade_id=None, grade=False):
        meta = {"nbgrader": {"grade_id": grade_id, "grade": grade, "points": 1}} if grade_id else {}
        return nbformat.v4.new_code_cell(source, metadata=meta)

    nb = nbformat.v4.new_notebook(cells=[
        cell("import numpy as np\nscale = 2", "setup"),                          # 0: read by f
        cell("def f(x):\n    return helper(x) * scale", "f"),                     # 1: the mutated cell
        cell("def helper(x):\n    return x + 1", "helper"),                       # 2: f's helper, read when called
        cell("assert f(1) == 4", "test_f", grade=True),                             # 3: reaches f
        cell("timings = [f(n) for n in range(10**6)]", "demo"),                     # 4: reads f, no test needs it
        cell("def g(x):\n    return -x", "g"),                                    # 5
        cell("assert g(1) == -1", "test_g", grade=True),                            # 6: f cannot reach it
        nbformat.v4.new_markdown_cell("prose"),                                     # 7
        cell("assert np.isclose(f(0), 2)", "test_f_again", grade=True),             # 8
    ])
    assert inprocess.to_run(nb, {"f"}) == {0, 1, 2, 3, 8}
    assert inprocess.to_run(nb, {"g"}) == {5, 6}
    nb.cells.append(cell("globals()['f'] = None"))                                 # names no syntax tree shows
    assert inprocess.to_run(nb, {"g"}) is None


@pytest.mark.parametrize("lab", LABS)
def test_in_process_grading_agrees_with_nbgrader(lab, lab_course):
    """The mutant bank is graded in-process, running only what the mutant's change reaches; on one mutant
    per lab that must give nbgrader's scores. (Its premise, that the solution earns full marks, is
    ``test_solution_scores_full_marks_quietly``'s, under nbgrader.) Where they differ, the message says
    whether the whole notebook run in-process differs too."""
    course = lab_course(lab)
    first = next(m for m in MUTANTS if m.lab == lab)
    pruned = _scores(first, course, with_nbgrader=False)
    nbgrader = _scores(first, course, with_nbgrader=True)
    if pruned != nbgrader:
        student = f"m-{first.name}"[:60]
        whole = inprocess.autograde(_planted(first, course), seed=pipeline.student_seed(SECRET, lab, student))
        raise AssertionError(f"{first.id}: in-process with pruning {pruned}, whole in-process {whole}, "
                             f"nbgrader {nbgrader}")
