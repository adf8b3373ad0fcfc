"""The student hand-out: what students need is there, nothing of the solutions or hidden tests is,
and it installs and serves on its own."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpudl import labserver
from gpudl_instructor import handout

# The hand-out runs the answer hunt: with test_hunt on one worker, it runs once (its results are cached
# by content, and a lab another process is hunting is waited for). On a cold cache it takes a few
# minutes: lab 10's, the longest, runs its checks' process groups only for the candidates its screen
# keeps (gpudl_instructor.hunt).
pytestmark = pytest.mark.xdist_group("hunt")
ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LABS = sorted(p.parent.name for p in (ROOT / "solutions").glob("*/*.ipynb") if p.stem == p.parent.name)


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("handout") / "gpudl-labs"
    res = subprocess.run([sys.executable, "-m", "gpudl_instructor", "handout", str(dest), "--root", str(ROOT)],
                         cwd=dest.parent, capture_output=True, text=True, timeout=1200)   # from anywhere, with --root
    assert res.returncode == 0, res.stdout + res.stderr
    assert str(dest) in res.stdout and "make lab" in res.stdout
    return dest


def _regions(source: str, begin: str, end: str) -> list[str]:
    return re.findall(rf"{re.escape(begin)}[^\n]*\n(.*?){re.escape(end)}", source, re.S)


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_it_holds_the_labs_the_lectures_the_package_and_a_student_readme(out):
    for lab in LABS:
        assert (out / "labs" / lab / f"{lab}.ipynb").read_bytes() == (ROOT / "labs" / lab / f"{lab}.ipynb").read_bytes()
    for lecture in (ROOT / "course").glob("*.ipynb"):
        assert (out / "course" / lecture.name).is_file(), lecture.name
    for name in ("pyproject.toml", "constraints/cpu.txt", "environment.yml", "src/gpudl/__init__.py",
                 "src/gpudl/grading/lab01.py", "src/gpudl/labserver.py"):
        assert (out / name).is_file(), name
    readme = (out / "README.md").read_text()
    for says in ("make lab", "pip install -e .", "Validate", "YOUR CODE HERE", "lecture notebook"):
        assert says in readme, says
    assert "solutions" not in readme and "seed" not in readme.lower()


def test_nothing_of_the_solutions_hidden_tests_or_grading_leaks(out):
    files = [p for p in out.rglob("*") if p.is_file()]
    rel = [p.relative_to(out).as_posix() for p in files]
    for forbidden in ("solutions/", "tests/", "mutants", ".gpudl-secret", "gradebook.db", "nbgrader_config.py",
                      ".github", ".ci/", "__pycache__", ".egg-info", "grading-out", "gpu-report"):
        assert not [r for r in rel if forbidden in r or r.startswith(forbidden)], forbidden
    assert handout.leaks(out) == []
    texts = {p: _squash(p.read_text(encoding="utf-8", errors="replace")) for p in files}
    for lab in LABS:
        source = (ROOT / "solutions" / lab / f"{lab}.ipynb").read_text()
        nb = nbformat.reads(source, as_version=4)
        cells = "\n".join(c.source + "\n" for c in nb.cells)
        solutions = _regions(cells, "### BEGIN SOLUTION", "### END SOLUTION")
        hidden = _regions(cells, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
        assert solutions and hidden, f"{lab}: no solution or hidden-test regions found: the test would prove nothing"
        for region in solutions:
            text = _squash(region)
            if len(text) < 40 or "\n" not in region.strip():
                continue        # `return x * 2`, or a one-line formula, is also the package's reference
            leaked = [p.relative_to(out) for p, t in texts.items() if text in t]
            assert not leaked, f"{lab}: a solution is in {leaked}:\n{region[:300]}"
        for region in hidden:
            text = _squash(region)
            notebooks_and_docs = {p: t for p, t in texts.items() if p.suffix in (".ipynb", ".md")}
            assert not [p for p, t in notebooks_and_docs.items() if text in t], f"{lab}: hidden test leaked: {text}"


def test_the_handout_installs_with_pip_and_its_makefile(out):
    res = subprocess.run([str(BIN / "python"), "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index",
                          "--no-build-isolation", "-e", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Would install gpudl" in res.stdout
    make = subprocess.run(["make", "-n", "lab"], cwd=out, capture_output=True, text=True, timeout=60)
    assert make.returncode == 0, make.stderr
    assert "pip install" in make.stdout and "-e ." in make.stdout and "gpudl lab" in make.stdout
    assert "constraints/cpu.txt" in make.stdout or "nvidia-smi" in (out / "Makefile").read_text()


def test_gpudl_imports_from_the_handout_and_serves_it(out, tmp_path):
    code = ("import gpudl, gpudl.grading.lab01, gpudl.labserver as h; print(gpudl.__file__); "
            f"print(h.course_root({str(out / 'labs' / LABS[0])!r}))")
    env = dict(os.environ, PYTHONPATH=str(out / "src"))
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    where, root = res.stdout.split()[-2:]
    assert Path(where).is_relative_to(out) and Path(root) == out
    assert labserver.course_root(out / "course") == out
    doctor = subprocess.run([sys.executable, "-m", "gpudl", "doctor"], cwd=out / "labs", capture_output=True,
                            text=True, timeout=600)
    assert f"course      {out} (hand-out): labs {', '.join(LABS)}" in doctor.stdout, doctor.stdout


def test_it_holds_the_course_edition_and_nothing_of_the_instructors_part(out):
    assert not list(out.rglob("gpudl_instructor*")) and not (out / "answers").exists()
    project = (out / "pyproject.toml").read_text()
    assert 'gpudl = "gpudl.cli:main"' in project and "gpudl_instructor" not in project
    assert 'include = ["gpudl", "gpudl.*"]' in project
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in (out / "src").rglob("*.py")]
    assert not [t for t in texts if "import gpudl_instructor" in t or "from gpudl_instructor" in t]
    env = dict(os.environ, PYTHONPATH=str(out / "src"))
    res = subprocess.run([sys.executable, "-m", "gpudl", "--help"], cwd=out, env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "doctor" in res.stdout and "lab" in res.stdout, res.stderr
    assert "grade" not in res.stdout and "handout" not in res.stdout


def test_answers_after_the_deadline_add_the_solution_and_the_references_of_closed_labs(tmp_path):
    lab = next(name for name in LABS if name.startswith("lab06"))
    dest = handout.handout(tmp_path / "week7", ROOT, answers=["lab06"], hunt=False)
    folder = dest / "answers" / lab
    assert sorted(p.name for p in folder.iterdir()) == [f"{lab}_solution.ipynb", "lab06_references.py"]
    assert "### BEGIN SOLUTION" in (folder / f"{lab}_solution.ipynb").read_text()
    assert "def lstm_cell_forward" in (folder / "lab06_references.py").read_text()
    assert not (dest / "answers" / LABS[0]).exists()
    with pytest.raises(ValueError, match="no lab 'lab99'"):
        handout.handout(tmp_path / "x", ROOT, answers=["lab99"], hunt=False)


def test_it_refuses_while_the_hunt_finds_an_answer(tmp_path, monkeypatch):
    from gpudl_instructor import hunt

    found = hunt.Finding("lab06_lstm_bptt", "test_sgd_step", "callable", "gpudl.lstm.sgd_step")
    monkeypatch.setattr(hunt, "hunt", lambda labs, root, **how: [found] if "lab06_lstm_bptt" in labs else [])
    monkeypatch.setattr(hunt, "PENDING", {})
    with pytest.raises(RuntimeError, match="(?s)refusing to hand out answers.*gpudl.lstm.sgd_step passes the hidden check"):
        handout.handout(tmp_path / "out", ROOT)
    assert not (tmp_path / "out").exists()
    handout.handout(tmp_path / "out", ROOT, answers=["lab06"])     # released on purpose: written


def test_it_refuses_to_overwrite_or_to_write_into_the_course(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="--force"):
        handout.handout(tmp_path / "x", ROOT)
    with pytest.raises(ValueError, match="folder of its own"):
        handout.handout(ROOT / "labs" / "handout", ROOT)


def test_it_refuses_a_release_that_holds_a_solution(tmp_path):
    course = tmp_path / "course-repo"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    for rel in handout.HANDOUT:                          # all the hand-out needs, but labs and the package
        if rel in ("labs", "src/gpudl"):
            continue
        (course / rel).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / rel).is_dir() else shutil.copy)(ROOT / rel, course / rel)
    (course / "src" / "gpudl").mkdir(parents=True)
    lab = LABS[0]
    (course / "solutions" / lab).mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / lab / f"{lab}.ipynb", course / "solutions" / lab)
    (course / "labs" / lab).mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / lab / f"{lab}.ipynb", course / "labs" / lab)   # "released" by hand
    with pytest.raises(RuntimeError, match="BEGIN SOLUTION"):
        handout.handout(tmp_path / "out", course, hunt=False)
    assert not (tmp_path / "out").exists()


def test_readme_quick_start_says_who_each_path_is_for():
    readme = (ROOT / "README.md").read_text()
    quick = readme[readme.index("## Quick start"):readme.index("## The units")]
    assert "**Students**" in quick and "hand-out" in quick and "**Instructors" in quick
    assert "make handout" in quick and "make lab" in quick
