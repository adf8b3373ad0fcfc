"""Shared fixtures: the repository, a scratch nbgrader course per lab, and the mutant bank.

A mutant is a file ``tests/mutants/<lab>/<name>.py``::

    # mutant: what a student got wrong, in one line
    # cell: the grade_id of the solution cell it replaces
    # fails: test_a, test_b        (optional; default: test_<cell>)
    <the replacement source of that cell>

or, for a small change to a long cell, substitutions applied to the solution cell (each
``replace`` text must occur exactly once in it, so a mutant cannot silently drift from the
solution it mutates)::

    # replace: acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # with: acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)

The pipeline tests plant it in the solution notebook, autograde, and require exactly the
``fails`` test cells to lose points.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from gpudl import notebooks
from gpudl_instructor import checks, pipeline, sandbox
from timeline import pytest_addoption, pytest_configure  # noqa: F401 - hooks: the run's count and wall time, --timeline

checks.install()          # hidden calls in this process (the mutant bank) run the instructor's checks

# Labs are graded the way `gpudl grade` grades them: in the sandbox, where bubblewrap works.
SANDBOX = sandbox.available()[0]

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "tests" / "mutants"
SECRET = "gpudl-test-secret"
# The start of a script that opens a guard alone, with a child process alive, and after it ended (printing
# "alone ran", "child refused True", "ended ran"): the sandbox's test and the student's kernel's go on from it.
GUARD_BESIDE_A_CHILD = """
import os, subprocess, sys, time
from gpudl import grading
from gpudl.references import ReferenceUsedError

def attempt(tag):
    try:
        with grading.guard(label="this check"):
            pass
        print(tag, "ran")
    except ReferenceUsedError as e:
        print(tag, "refused", "left another process running" in str(e) and "sleep 30" in str(e))

attempt("alone")
child = subprocess.Popen(["sleep", "30"])
while open(f"/proc/{child.pid}/cmdline", "rb").read().split(b"\\0")[0] != b"sleep":   # until it has exec'd
    time.sleep(0.01)
attempt("child")
child.kill(); child.wait()
attempt("ended")
"""

# Notebooks run headless and quietly.
os.environ.setdefault("MPLBACKEND", "Agg")


@dataclass(frozen=True)
class Mutant:
    lab: str
    name: str
    cell: str
    fails: tuple[str, ...]
    description: str
    source: str
    replacements: tuple[tuple[str, str], ...] = ()

    @property
    def id(self) -> str:
        return f"{self.lab}/{self.name}"

    def planted(self, solution_source: str) -> str:
        """The cell's mutated source: the file's body, or the solution with the substitutions."""
        if not self.replacements:
            return self.source
        src = solution_source
        for old, new in self.replacements:
            count = src.count(old)
            if count != 1:
                raise ValueError(f"mutant {self.id}: {old!r} occurs {count} times in cell {self.cell!r}, not once")
            src = src.replace(old, new)
        return src


_HEADER = re.compile(r"^# (mutant|cell|fails|replace|with):(?: (.*))?$")


def parse_mutant(path: Path) -> Mutant:
    text = path.read_text()
    fields = [m.groups() for m in map(_HEADER.match, text.splitlines()) if m]
    header = {k: (v or "").strip() for k, v in fields if k in ("mutant", "cell", "fails")}
    missing = {"mutant", "cell"} - set(header)
    if missing:
        raise ValueError(f"{path}: header lacks {sorted(missing)}")
    subs = [(k, v or "") for k, v in fields if k in ("replace", "with")]
    if [k for k, _ in subs] != ["replace", "with"] * (len(subs) // 2):
        raise ValueError(f"{path}: each '# replace:' line needs a '# with:' line after it")
    replacements = tuple((subs[i][1].strip(), subs[i + 1][1].strip()) for i in range(0, len(subs), 2))
    body = "\n".join(ln for ln in text.splitlines() if not _HEADER.match(ln)).strip("\n")
    if replacements and body:
        raise ValueError(f"{path}: give either substitutions or a replacement body, not both")
    fails = tuple(f.strip() for f in header.get("fails", f"test_{header['cell']}").split(",") if f.strip())
    return Mutant(path.parent.name, path.stem, header["cell"], fails, header["mutant"], body, replacements)


def all_mutants() -> list[Mutant]:
    return [parse_mutant(p) for p in sorted(MUTANTS.glob("*/*.py"))]


def student_copy(lab: str) -> nbformat.NotebookNode:
    """What a good student hands in: the release with every solution cell filled in."""
    release = notebooks.read(ROOT / "labs" / lab / f"{lab}.ipynb")
    solution = notebooks.read(ROOT / "solutions" / lab / f"{lab}.ipynb")
    for cell in release.cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if nbg.get("solution"):
            cell.source = notebooks.find_cell(solution, nbg["grade_id"]).source
    return release


def stop_process_group(proc) -> None:
    """SIGTERM a server's process group, SIGKILL it if it lingers."""
    import signal
    import subprocess

    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def lab_names() -> list[str]:
    return pipeline.lab_names(ROOT)


class LabCourse:
    """A scratch course for one lab: its release, its gradebook, and autograding into it."""

    def __init__(self, lab: str, workdir: Path):
        self.lab = lab
        self.workdir = workdir
        self.released_path = pipeline.generate(lab, ROOT, workdir / "course")
        self.released = nbformat.read(str(self.released_path), as_version=4)
        self.solution_path = ROOT / "solutions" / lab / f"{lab}.ipynb"
        self.solution = nbformat.read(str(self.solution_path), as_version=4)
        self.points = notebooks.graded_cells(self.released)
        self.base_gradebook = workdir / "base.db"
        self.base_gradebook.write_bytes((workdir / "course" / "gradebook.db").read_bytes())

    def autograde(self, student: str, nb: nbformat.NotebookNode | Path):
        path = nb if isinstance(nb, Path) else self.workdir / f"{student}.ipynb"
        if not isinstance(nb, Path):
            nbformat.write(nb, str(path))
        result, _db = pipeline.autograde_student(
            self.lab, student, path, self.base_gradebook, self.workdir / "students",
            seed=pipeline.student_seed(SECRET, self.lab, student), sandbox=SANDBOX,
            extra_env={"GPUDL_KEEP_STDERR": "1"})
        graded = nbformat.read(str(result.autograded), as_version=4) if result.autograded else None
        return result, graded


@pytest.fixture(scope="session")
def lab_course(tmp_path_factory):
    cache: dict[str, LabCourse] = {}

    def get(lab: str) -> LabCourse:
        if lab not in cache:
            cache[lab] = LabCourse(lab, tmp_path_factory.mktemp(lab))
        return cache[lab]

    return get


@pytest.fixture
def quick_deadlocks(monkeypatch):
    """Lab 10's limit for a ring that deadlocks, 15 s in a graded run, at 5 s where the mutant bank runs
    its checks in this process: a deadlocked mutant is still stopped and named (and rings of a few
    dozen numbers finish in milliseconds), at a third of the wait."""
    from gpudl.grading import lab10

    monkeypatch.setattr(lab10, "TIMEOUT_S", 5.0)
