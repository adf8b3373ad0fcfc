"""The answer hunt: the course edition holds nothing that scores on a hidden check, and the hunt
would notice if it did (a planted answer, a pasted solution)."""
from __future__ import annotations

import shutil

import nbformat
import pytest

from conftest import ROOT, lab_names
from gpudl_instructor import hunt

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hunt")]   # with the hand-out's tests


@pytest.mark.parametrize("lab", lab_names())
def test_the_course_edition_holds_no_answer_of(lab):
    if lab in hunt.PENDING:
        pytest.skip(f"{lab}: {hunt.PENDING[lab]}")
    findings = hunt.hunt([lab], ROOT)
    assert not findings, hunt.report(findings)


def test_the_hunt_names_an_answer_planted_among_the_candidates():
    """The instructor's reference of an exercise, offered as if it were a course tool, scores and is named;
    a tool with the wrong contract does not."""
    from gpudl_instructor.references import lab06

    pool = {"gpudl.planted.sgd_step": lab06.sgd_step, "gpudl.planted.sorted": lambda a, b, c: sorted(a)}
    findings = hunt.hunt_callables("lab06_lstm_bptt", ROOT, pool=pool)
    assert [(f.exercise, f.where) for f in findings] == [("test_sgd_step", "gpudl.planted.sgd_step")], findings


def test_the_text_hunt_finds_a_solution_pasted_into_the_course_edition(tmp_path):
    lab = "lab06_lstm_bptt"
    for folder in ("course", f"solutions/{lab}", f"labs/{lab}"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    (tmp_path / "src" / "gpudl").mkdir(parents=True)
    assert hunt.text_hunt(lab, tmp_path) == []
    solution = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    cell = next(c for c in solution.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "lstm_cell_backward")
    (tmp_path / "src" / "gpudl" / "helpers.py").write_text("# a helper\n" + cell.source.replace("### BEGIN SOLUTION", ""))
    findings = hunt.text_hunt(lab, tmp_path)
    assert [(f.exercise, f.where) for f in findings] == [("lstm_cell_backward", "src/gpudl/helpers.py")], findings
