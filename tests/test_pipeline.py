"""gpudl grade: one broken submission never stops the others, and every row says why."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from gpudl import notebooks
from gpudl_instructor import pipeline
from conftest import ROOT, SECRET
from conftest import student_copy as conftest_student_copy

LAB = "lab01_performance_basics"
SOLUTION = ROOT / "solutions" / LAB / f"{LAB}.ipynb"
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pipeline")]   # its module fixture once, on one worker


def student_copy() -> nbformat.NotebookNode:
    return conftest_student_copy(LAB)


def write(nb, folder: Path, name: str = f"{LAB}.ipynb") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / name))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("submissions")
    good = student_copy()
    write(notebooks.read(SOLUTION), subs / "alice")
    write(good, subs / "bob")
    write(notebooks.replace_source(good, "peak_flops_from_units",
                                   "def peak_flops_from_units(sms, fma, clock):\n    while True:\n        pass\n"),
          subs / "carol")
    (subs / "dave").mkdir()
    (subs / "dave" / f"{LAB}.ipynb").write_text('{"cells": [ {"cell_type": "code", ')
    write(good, subs / "erin", "my_lab01_final.ipynb")
    dup = student_copy()
    copied = nbformat.from_dict(json.loads(json.dumps(notebooks.find_cell(dup, "bound"))))
    copied.id = "copy-of-bound"            # Jupyter gives a pasted cell a new id, not new nbgrader metadata
    dup.cells.insert(5, copied)
    write(dup, subs / "frank")
    wrong_bound = notebooks.replace_source(good, "bound", "def bound(f, b, p, w):\n    return 'compute'\n")
    grace = nbformat.from_dict(json.loads(json.dumps(wrong_bound)))
    grace.cells = [c for c in grace.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "test_bound"]
    write(grace, subs / "grace")
    heidi = nbformat.from_dict(json.loads(json.dumps(wrong_bound)))
    notebooks.find_cell(heidi, "test_bound").source = "assert True"
    write(heidi, subs / "heidi")
    write(notebooks.replace_source(good, "utilization", "import os\nos._exit(1)\n"), subs / "ivan")
    out = tmp_path_factory.mktemp("out")
    lines: list[str] = []
    results = pipeline.grade(LAB, subs, out, root=ROOT, secret=SECRET, jobs=2, cell_timeout=15,
                             student_timeout=300, progress=False, echo=lines.append)
    return out, {r.student: r for r in results}, lines


def test_correct_submissions_get_full_marks(graded):
    out, results, _ = graded
    for student in ("alice", "bob"):
        assert results[student].graded and results[student].score == results[student].max_score == 32, results[student]
    rows = pipeline.read_scores(out / "grades.csv")
    assert rows["alice"]["score"] == rows["bob"]["score"] == 32


def test_the_status_file_says_where_each_students_seconds_went(graded):
    out, results, lines = graded
    status = json.loads((out / pipeline.STATUS_FILE).read_text())[LAB]
    carol = status["carol"]["timings"]
    for name in ("alice", "carol"):
        t = status[name]["timings"]
        assert 0 < t["kernel_start"] < t["autograde"] and 0 < t["cells"] < t["autograde"], t
        assert t["setup"] + t["autograde"] + t["feedback"] <= status[name]["seconds"], t
    # carol's loop ran in the test cell that calls it until the cell's 15 s limit: the slowest cell, by its grade id
    assert next(iter(carol["slowest_cells"])) == "test_peak_flops_from_units" and carol["cells"] >= 15
    assert any("gathered in" in line for line in lines)


def test_every_submission_has_a_row_with_its_reason(graded):
    out, results, lines = graded
    rows = pipeline.read_scores(out / "grades.csv")
    assert set(rows) == {"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"}
    assert "invalid notebook" in rows["dave"]["reason"] and rows["dave"]["score"] == 0
    assert "renamed notebook" in rows["erin"]["reason"] and "my_lab01_final.ipynb" in rows["erin"]["reason"]
    assert "duplicated cell" in rows["frank"]["reason"] and "'bound'" in rows["frank"]["reason"]
    assert "kernel died" in rows["ivan"]["reason"] and rows["ivan"]["status"] == "not graded"
    for student in ("dave", "erin", "frank", "ivan"):
        assert rows[student]["status"] == "not graded" and rows[student]["score"] == 0
        assert any(line.startswith(f"{student}: NOT GRADED") for line in lines)


def test_an_infinite_loop_costs_only_its_exercise(graded):
    _, results, _ = graded
    carol = results["carol"]
    assert carol.graded and carol.scores["test_peak_flops_from_units"] == 0
    assert carol.score == 32 - 4
    assert any("timed out" in n for n in carol.notes), carol.notes


def test_deleted_or_edited_tests_are_restored_and_graded(graded):
    _, results, _ = graded
    for student, word in (("grace", "deleted"), ("heidi", "edited")):
        r = results[student]
        assert r.graded and r.scores["test_bound"] == 0, r
        assert r.score == 32 - 4
        assert any(f"'test_bound' was {word}" in n for n in r.notes), r.notes


def test_gradebook_and_feedback(graded):
    from nbgrader.api import Gradebook

    out, results, _ = graded
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=pipeline.COURSE_ID) as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions(LAB)}
        assert {s.id for s in gb.students} >= set(results)
    assert scores["alice"] == scores["bob"] == 32 and scores["grace"] == 28 and scores["carol"] == 28
    html = (out / "feedback" / "alice" / LAB / f"{LAB}.html").read_text()
    assert "peak_flops_from_units" in html
    assert "hidden=True" not in html and "HIDDEN TESTS" not in html, "feedback shows hidden tests"


def test_lms_layouts_are_recognised(tmp_path):
    good = nbformat.writes(student_copy())
    canvas = tmp_path / "canvas.zip"
    with zipfile.ZipFile(canvas, "w") as zf:
        zf.writestr(f"doejane_12345_67890_{LAB}.ipynb", good)
        zf.writestr(f"roe_LATE_222_333_{LAB}-1.ipynb", good)
        zf.writestr("smith_1_2_notes.ipynb", good)
    subs = {s.student: s for s in pipeline.find_submissions(canvas, LAB, workdir=tmp_path / "w1")}
    assert set(subs) == {"doejane", "roe", "smith"}
    assert subs["doejane"].notebook and subs["roe"].notebook and "renamed" in subs["smith"].problem
    moodle = tmp_path / "moodle.zip"
    with zipfile.ZipFile(moodle, "w") as zf:
        zf.writestr(f"all/Jane Doe_1001_assignsubmission_file_/{LAB}.ipynb", good)
        zf.writestr(f"all/Max Roe_1002_assignsubmission_file_/work/{LAB}.ipynb", good)
        zf.writestr("all/Empty One_1003_assignsubmission_file_/readme.txt", "hi")
    subs = {s.student: s for s in pipeline.find_submissions(moodle, LAB, workdir=tmp_path / "w2")}
    assert set(subs) == {"Jane-Doe", "Max-Roe", "Empty-One"}
    assert subs["Max-Roe"].notebook.name == f"{LAB}.ipynb" and "no notebook" in subs["Empty-One"].problem
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../escape.ipynb", good)
        zf.writestr(f"kim/{LAB}.ipynb", good)
    subs = {s.student: s for s in pipeline.find_submissions(evil, LAB, workdir=tmp_path / "w3")}
    assert set(subs) == {"escape", "kim"}, "one bad entry gets its own row; the others are still graded"
    assert "unsafe path" in subs["escape"].problem and subs["escape"].notebook is None
    assert subs["kim"].notebook is not None
    assert not (tmp_path / "escape.ipynb").exists() and not (tmp_path / "w3" / "escape.ipynb").exists()


def test_cli_grades_a_zip_and_regrades_in_place(graded, tmp_path):
    out, _, _ = graded
    zipped = tmp_path / "late.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr(f"bob/{LAB}.ipynb", nbformat.writes(notebooks.read(RELEASE)))   # bob regraded: now blank
    env = dict(os.environ, GPUDL_SECRET=SECRET, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    res = subprocess.run([sys.executable, "-m", "gpudl_instructor", "grade", LAB, str(zipped), "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "bob: 0/32" in res.stdout
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=pipeline.COURSE_ID) as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions(LAB)}
    assert scores["bob"] == 0 and scores["alice"] == 32      # bob replaced, the others kept
    rows = pipeline.read_scores(out / "grades.csv")
    assert set(rows) == {"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan"}, (
        "grades.csv must keep every student graded so far, not only the regraded one")
    assert rows["bob"]["score"] == 0 and rows["alice"]["score"] == 32 and "invalid notebook" in rows["dave"]["reason"]
    assert not list(out.glob("*.tmp")), "grades.csv is written through a temporary file, then renamed"


def test_a_submission_the_grader_cannot_read_gets_a_row_with_the_reason(tmp_path, monkeypatch):
    """An error while a worker reads a submission (CPython 3.11's ast.parse once raised SystemError
    in a thread) is that student's row, not a worker lost with the students after it."""
    for name in ("amy", "ben", "cal"):
        write(student_copy(), tmp_path / "subs" / name)

    def broken(sub, released, scratch):
        raise SystemError("AST constructor recursion depth mismatch (before=24, after=14)")

    monkeypatch.setattr(pipeline, "_prepare", broken)
    results = pipeline.grade(LAB, tmp_path / "subs", tmp_path / "out", root=ROOT, secret=SECRET, jobs=2,
                             progress=False, echo=lambda *_: None)
    rows = pipeline.read_scores(tmp_path / "out" / "grades.csv")
    assert sorted(r.student for r in results) == sorted(rows) == ["amy", "ben", "cal"]
    assert all(r["status"] == "not graded" and "could not read it (SystemError: AST" in r["reason"]
               for r in rows.values()), rows


def test_a_check_out_of_memory_keeps_no_score_and_other_check_errors_stay_failures(tmp_path, monkeypatch):
    """A check that runs out of memory itself (lab07's once filled a GPU a class shared) zeroes a cell
    for a reason that is not the student's: the row is "not graded", says why and how to grade again,
    and the gradebook keeps no score. Any other error in a check (a student can hand a check its own
    check: ``bound = check.bound``) stays that cell's failure, with a note for the course staff."""
    from nbgrader.api import Gradebook

    from gpudl_instructor.checker import out_of_memory

    class OutOfMemoryError(RuntimeError):           # torch.OutOfMemoryError's name, without CUDA
        pass

    assert out_of_memory(OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB"))
    assert out_of_memory(MemoryError()) and out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not out_of_memory(TypeError("bound() takes 1 positional argument but 4 were given"))
    assert not out_of_memory(RuntimeError("shape mismatch"))

    for name in ("amy", "ben", "cal"):
        write(student_copy(), tmp_path / "subs" / name)
    real = pipeline._grade_in_child

    def checks_break(job, env, timeout):
        report = real(job, env, timeout)
        error = {"ben": "gpudl.grading.lab01:bound: OutOfMemoryError: CUDA out of memory",
                 "cal": "gpudl.grading.lab01:bound: TypeError: bound() takes 1 positional argument"}.get(job.student)
        if error:
            report["checker_errors"] = [error]
            report["checker_out_of_memory"] = [error] if job.student == "ben" else []
        return report

    monkeypatch.setattr(pipeline, "_grade_in_child", checks_break)
    results = pipeline.grade(LAB, tmp_path / "subs", tmp_path / "out", root=ROOT, secret=SECRET, jobs=1,
                             progress=False, echo=lambda *_: None)
    rows = pipeline.read_scores(tmp_path / "out" / "grades.csv")
    assert rows["amy"]["status"] == "graded" and rows["amy"]["score"] == 32
    assert rows["ben"]["status"] == "not graded", rows["ben"]
    assert "the grader's own check ran out of memory, not the student's work (gpudl.grading.lab01:bound: OutOfMemory" \
        in rows["ben"]["reason"] and "grade this student again" in rows["ben"]["reason"]
    assert rows["cal"]["status"] == "graded", rows["cal"]
    assert any("the grader's check failed (tell the course staff): gpudl.grading.lab01:bound: TypeError" in n
               for n in next(r for r in results if r.student == "cal").notes)
    with Gradebook(f"sqlite:///{tmp_path / 'out' / 'gradebook.db'}", course_id=pipeline.COURSE_ID) as gb:
        graded = {s.student.id for s in gb.assignment_submissions(LAB)}
    assert "ben" not in graded and {"amy", "cal"} <= graded


def test_secret_file_is_created_once_and_private(tmp_path, monkeypatch):
    monkeypatch.delenv(pipeline.SECRET_ENV, raising=False)
    first = pipeline.load_secret(tmp_path)
    assert first == pipeline.load_secret(tmp_path) and len(first) == 32
    assert (tmp_path / pipeline.SECRET_FILE).stat().st_mode & 0o077 == 0
    assert pipeline.student_seed(first, LAB, "a") != pipeline.student_seed(first, LAB, "b")


def test_a_failed_test_names_the_error_in_the_students_own_cells_it_follows_from(tmp_path):
    """A syntax error in a solution cell, not the NameError it leads to, is the mistake to fix; a
    NameError names the own cell that should have defined the name (not the first that raised); IPython's
    file name for a cell reads as the cell's line."""
    nb = nbformat.v4.new_notebook()
    setup = nbformat.v4.new_code_cell("import gpudl", metadata={"nbgrader": {"grade_id": "setup", "locked": True}})
    answer = nbformat.v4.new_code_cell("def lstm_flops(T, N, D, H)\n    return 0",
                                       metadata={"nbgrader": {"grade_id": "lstm_flops", "solution": True}})
    answer.outputs = [nbformat.v4.new_output("error", ename="SyntaxError", evalue="expected ':' (3349754240.py, line 1)",
                                             traceback=[])]
    test = nbformat.v4.new_code_cell("check.lstm_flops(lstm_flops)",
                                     metadata={"nbgrader": {"grade_id": "test_lstm_flops", "grade": True, "points": 2}})
    test.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="name 'lstm_flops' is not defined",
                                           traceback=[])]
    nb.cells = [setup, answer, test]
    path = tmp_path / "graded.ipynb"
    nbformat.write(nb, str(path))
    lines = pipeline._cell_errors(path, ["test_lstm_flops"])
    assert lines == ["test_lstm_flops: NameError: name 'lstm_flops' is not defined (the error in your own cells it "
                     "follows from: cell 'lstm_flops': SyntaxError: expected ':' (line 1 of the cell))"]
    answer.outputs = []
    nbformat.write(nb, str(path))
    assert pipeline._cell_errors(path, ["test_lstm_flops"]) == ["test_lstm_flops: NameError: name 'lstm_flops' "
                                                                "is not defined"]
    # two unanswered questions: each test's NameError names its own question's cell, not the first that raised
    first = nbformat.v4.new_code_cell("# YOUR CODE HERE\nraise NotImplementedError()",
                                      metadata={"nbgrader": {"grade_id": "fps_answer", "solution": True}})
    second = nbformat.v4.new_code_cell("# ENERGY_RATIO = ...\nENERGY_RATIO: float = compute()",
                                       metadata={"nbgrader": {"grade_id": "energy_ratio", "solution": True}})
    for cell, ename in ((first, "NotImplementedError"), (second, "NameError")):
        cell.outputs = [nbformat.v4.new_output("error", ename=ename, evalue="", traceback=[])]
    test.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="name 'ENERGY_RATIO' is not defined",
                                           traceback=[])]
    nb.cells = [setup, first, second, test]
    nbformat.write(nb, str(path))
    assert pipeline._cell_errors(path, ["test_lstm_flops"]) == [
        "test_lstm_flops: NameError: name 'ENERGY_RATIO' is not defined (the error in your own cells it follows "
        "from: cell 'energy_ratio': NameError: )"]
    second.source = "# YOUR CODE HERE\nraise NotImplementedError()"     # unanswered: the nearest own error above
    second.outputs = [nbformat.v4.new_output("error", ename="NotImplementedError", evalue="", traceback=[])]
    nbformat.write(nb, str(path))
    assert pipeline._cell_errors(path, ["test_lstm_flops"]) == [
        "test_lstm_flops: NameError: name 'ENERGY_RATIO' is not defined (the error in your own cells it follows "
        "from: cell 'energy_ratio': NotImplementedError: )"]
    nb.cells = [setup, answer, test]
    # a test failing for its own reason after an unrelated exception keeps its own reason alone
    answer.outputs = [nbformat.v4.new_output("error", ename="NotImplementedError", evalue="", traceback=[])]
    test.outputs = [nbformat.v4.new_output("error", ename="GradingError", evalue="lstm_flops is not implemented yet",
                                           traceback=[])]
    nbformat.write(nb, str(path))
    assert pipeline._cell_errors(path, ["test_lstm_flops"]) == ["test_lstm_flops: GradingError: lstm_flops is not "
                                                                "implemented yet"]
