"""The nbgrader pipeline: release labs from solutions, grade submissions one student per process.

``solutions/LAB/LAB.ipynb`` is the instructor's notebook (solutions and hidden tests);
``labs/LAB/LAB.ipynb`` is what ``nbgrader generate_assignment`` makes of it. Grading a
folder of submissions (or an LMS zip) goes:

1. inspect each submission without running it: the notebook is found under its name,
   parses as JSON, holds no duplicated graded cell; edited or deleted test cells are noted
   (nbgrader restores them from the gradebook before grading);
2. autograde each student in a process of its own, in a scratch course that holds only
   that student's notebook and a copy of the assignment's gradebook, with the secret seed
   for the hidden tests in the environment and a wall-clock limit;
3. merge each student's grades into ``OUT/gradebook.db``, write feedback HTML without
   hidden tests, and ``OUT/grades.csv`` with a row for every student, graded or not.

Public names: ``configure_nbgrader``, ``repo_root``, ``lab_names``, ``generate``,
``release``, ``find_submissions``, ``inspect_submission``, ``autograde_student``,
``grade``, ``StudentResult``, ``Submission``.
"""
from __future__ import annotations

import csv
import hashlib
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import nbformat

from . import notebooks

COURSE_ID = "gpudl"
SEED_ENV = "GPUDL_GRADING_SEED"     # read by gpudl.grading.rng inside the graded kernel
SECRET_ENV = "GPUDL_SECRET"         # the instructor's secret, from which each student's seed derives
SECRET_FILE = ".gpudl-secret"
DEFAULT_CELL_TIMEOUT = 180          # seconds per cell (a GPU lab on a cold machine compiles kernels)
DEFAULT_STUDENT_TIMEOUT = 1200      # seconds for one student's whole notebook

# stderr chunks to drop before scoring: a test cell that writes to stderr scores 0, and
# warnings or progress bars from libraries are not the student's fault.
IGNORE_STDERR = r"(Warning:|warnings\.warn|\d+%\|)"


def configure_nbgrader(c: Any, *, cell_timeout: int | None = None) -> None:
    """The nbgrader settings every course directory of gpudl shares (its nbgrader_config.py
    and the scratch courses of ``gpudl grade``)."""
    c.CourseDirectory.course_id = COURSE_ID
    c.Execute.timeout = int(cell_timeout or os.environ.get("GPUDL_CELL_TIMEOUT", DEFAULT_CELL_TIMEOUT))
    c.Execute.interrupt_on_timeout = True
    c.Execute.startup_timeout = 120
    c.IgnorePattern.enabled = True
    c.IgnorePattern.pattern = IGNORE_STDERR
    c.LimitOutput.max_lines = 1000
    c.LimitOutput.max_traceback = 100
    c.OverwriteCells.add_missing_cells = True
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    # Feedback must not show hidden tests.
    c.GenerateFeedback.preprocessors = [
        "nbgrader.preprocessors.GetGrades",
        "nbgrader.preprocessors.ClearHiddenTests",
        "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    ]


# --- course directories ------------------------------------------------------------------

def repo_root(start: str | Path | None = None) -> Path:
    """The course repository: the nearest directory upward holding nbgrader_config.py and solutions/."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / "nbgrader_config.py").is_file() and (d / "solutions").is_dir():
            return d
    raise FileNotFoundError(f"no course repository (nbgrader_config.py + solutions/) at or above {here}")


def lab_names(root: str | Path | None = None) -> list[str]:
    root = repo_root(root)
    return sorted(p.parent.name for p in (root / "solutions").glob("*/*.ipynb") if p.stem == p.parent.name)


def _nbgrader_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")   # alembic must be on PATH
    src = str(Path(__file__).resolve().parents[1])            # gpudl importable by config and kernels
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("NBGRADER_EXECUTION", None)
    env.update(extra or {})
    return env


def _write_config(course: Path, *, cell_timeout: int | None = None) -> None:
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        "from gpudl.pipeline import configure_nbgrader\n"
        "c = get_config()  # noqa: F821\n"
        f"configure_nbgrader(c, cell_timeout={cell_timeout!r})\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
    )


def _nbgrader(args: list[str], course: Path, *, timeout: float | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run nbgrader in its own process group, killed whole if it outlives ``timeout``."""
    proc = subprocess.Popen([sys.executable, "-m", "nbgrader", *args], cwd=course, env=_nbgrader_env(env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return subprocess.CompletedProcess(proc.args, -9, out + f"\n[gpudl] killed after {timeout:.0f} s", None)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, None)


def generate(lab: str, root: str | Path | None, course: Path, *, cell_timeout: int | None = None) -> Path:
    """``nbgrader generate_assignment`` for ``lab`` in a scratch course; returns the release notebook."""
    root = repo_root(root)
    src = root / "solutions" / lab
    if not (src / f"{lab}.ipynb").is_file():
        raise FileNotFoundError(f"no solutions/{lab}/{lab}.ipynb; labs are: {', '.join(lab_names(root))}")
    _write_config(course, cell_timeout=cell_timeout)
    shutil.copytree(src, course / "source" / lab, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    res = _nbgrader(["generate_assignment", lab, "--force"], course)
    released = course / "release" / lab / f"{lab}.ipynb"
    if res.returncode != 0 or not released.is_file():
        raise RuntimeError(f"nbgrader generate_assignment {lab} failed:\n{res.stdout[-4000:]}")
    return released


def release(lab: str | None = None, root: str | Path | None = None) -> list[Path]:
    """Regenerate ``labs/LAB/`` from ``solutions/LAB/`` (every lab when ``lab`` is None)."""
    root = repo_root(root)
    written = []
    for name in ([lab] if lab else lab_names(root)):
        with tempfile.TemporaryDirectory(prefix="gpudl-release-") as tmp:
            released = generate(name, root, Path(tmp))
            dest = root / "labs" / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(released.parent, dest)
            written.append(dest / released.name)
    return written


# --- submissions --------------------------------------------------------------------------

@dataclass
class Submission:
    student: str
    notebook: Path | None       # None when nothing gradable was found
    problem: str = ""           # why it cannot be graded, when notebook is None


_CANVAS = re.compile(r"^(?P<student>[^_]+)_(?:LATE_)?\d+_\d+_(?P<name>.+)$")
_MOODLE = re.compile(r"^(?P<student>.+?)_\d+_assignsubmission_file_?$")


def _student_id(raw: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-") or "unknown"


def _pick_notebook(folder: Path, lab: str, accept_renamed: bool) -> tuple[Path | None, str]:
    notebooks_ = sorted(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    exact = [p for p in notebooks_ if p.name == f"{lab}.ipynb"]
    if len(exact) == 1:
        return exact[0], ""
    if len(exact) > 1:
        return None, f"{len(exact)} copies of {lab}.ipynb: " + ", ".join(str(p.relative_to(folder)) for p in exact)
    if not notebooks_:
        return None, f"no notebook submitted (expected {lab}.ipynb)"
    if len(notebooks_) == 1 and accept_renamed:
        return notebooks_[0], ""
    names = ", ".join(p.name for p in notebooks_)
    return None, (f"renamed notebook: found {names}, expected {lab}.ipynb "
                  "(rename it and resubmit, or grade with --accept-renamed)")


def find_submissions(path: str | Path, lab: str, *, workdir: Path | None = None,
                     accept_renamed: bool = False) -> list[Submission]:
    """Students and their notebooks from a folder of student folders, or an LMS zip.

    Layouts understood: ``STUDENT/[LAB/]LAB.ipynb`` folders; Canvas files
    ``name_12345_67890_LAB.ipynb``; Moodle folders ``Full Name_12345_assignsubmission_file_``.
    A zip is unpacked into ``workdir`` first.
    """
    path = Path(path)
    if path.is_file() and zipfile.is_zipfile(path):
        dest = Path(workdir or tempfile.mkdtemp(prefix="gpudl-zip-")) / "unzipped"
        with zipfile.ZipFile(path) as zf:
            for member in zf.namelist():       # refuse paths that escape the folder
                if member.startswith("/") or ".." in Path(member).parts:
                    raise ValueError(f"unsafe path in zip: {member}")
            zf.extractall(dest)
        path = dest
        entries = [p for p in dest.iterdir() if not p.name.startswith(("__MACOSX", "."))]
        if len(entries) == 1 and entries[0].is_dir() and len(list(entries[0].iterdir())) > 1:
            path = entries[0]          # a zip that wraps the submissions in one folder
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is neither a folder of submissions nor a zip")
    found: dict[str, Submission] = {}
    for entry in sorted(path.iterdir()):
        if entry.name.startswith((".", "__MACOSX")):
            continue
        if entry.is_dir():
            m = _MOODLE.match(entry.name)
            student = _student_id(m["student"] if m else entry.name)
            nb, problem = _pick_notebook(entry, lab, accept_renamed)
        elif entry.suffix == ".ipynb":
            m = _CANVAS.match(entry.name)
            student = _student_id(m["student"] if m else entry.stem)
            original = m["name"] if m else entry.name
            renamed = original != f"{lab}.ipynb" and not re.fullmatch(rf"{re.escape(lab)}(-\d+)?\.ipynb", original)
            nb, problem = (None, f"renamed notebook: found {original}, expected {lab}.ipynb") if (
                renamed and not accept_renamed) else (entry, "")
        else:
            continue
        if student in found:
            student = f"{student}-{len(found)}"
        found[student] = Submission(student, nb, problem)
    return list(found.values())


_HIDDEN = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.S)


def _visible(source: str) -> str:
    """A test cell's source without its hidden region (a student's copy never has one)."""
    return _HIDDEN.sub("", source).strip()


def inspect_submission(nb_path: Path, released: nbformat.NotebookNode) -> tuple[str, list[str]]:
    """Check a submission without running it. Returns (problem, notes): a non-empty problem
    means it cannot be graded; notes say what nbgrader will repair."""
    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - every unreadable file is reported the same way
        return f"invalid notebook (not readable as notebook JSON): {str(exc).splitlines()[0][:200]}", []
    if not isinstance(nb.get("cells"), list):
        return "invalid notebook: no list of cells", []
    counts: dict[str, int] = {}
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid:
            counts[gid] = counts.get(gid, 0) + 1
    dups = {k: v for k, v in counts.items() if v > 1}
    if dups:
        what = ", ".join(f"'{k}' x{v}" for k, v in sorted(dups.items()))
        return (f"duplicated cell: {what} (a copied graded cell; keep one copy of each and resubmit)", [])
    notes = []
    by_id = {c.metadata.nbgrader["grade_id"]: c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")}
    for cell in released.cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if not nbg.get("locked"):
            continue
        gid = nbg["grade_id"]
        if gid not in by_id:
            notes.append(f"cell '{gid}' was deleted; nbgrader restored it")
        elif _visible(by_id[gid].source) != _visible(cell.source):
            notes.append(f"cell '{gid}' was edited; nbgrader restored the original")
    return "", notes


# --- grading ---------------------------------------------------------------------------

@dataclass
class StudentResult:
    student: str
    graded: bool
    score: float = 0.0
    max_score: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    autograded: Path | None = None
    gradebook: Path | None = None    # the scratch gradebook to merge into the main one

    def line(self) -> str:
        if not self.graded:
            return f"{self.student}: NOT GRADED ({self.reason}); score 0/{self.max_score:g}"
        extra = f"  [{'; '.join(self.notes)}]" if self.notes else ""
        return f"{self.student}: {self.score:g}/{self.max_score:g} in {self.seconds:.0f} s{extra}"


def student_seed(secret: str, lab: str, student: str) -> str:
    return hashlib.sha256(f"{secret}:{lab}:{student}".encode()).hexdigest()[:32]


def load_secret(root: Path | None, explicit: str | None = None) -> str:
    """The instructor's secret: --secret, $GPUDL_SECRET, or .gpudl-secret (made once, git-ignored)."""
    if explicit:
        return explicit
    if os.environ.get(SECRET_ENV):
        return os.environ[SECRET_ENV]
    path = (root or Path.cwd()) / SECRET_FILE
    if not path.exists():
        path.write_text(secrets.token_hex(16) + "\n")
        path.chmod(0o600)
    return path.read_text().strip()


def _cell_errors(nb_path: Path, graded: Iterable[str]) -> list[str]:
    """One line per graded cell that failed, and per cell that timed out."""
    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception:  # noqa: BLE001
        return []
    graded = set(graded)
    lines = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", f"cell {index}")
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                if out.get("ename") in ("CellTimeoutError", "KeyboardInterrupt"):   # nbgrader interrupts at the limit
                    lines.append(f"cell '{gid}' timed out (interrupted at the per-cell limit)")
                elif gid in graded:
                    first = (out.get("evalue") or "").strip().splitlines()
                    lines.append(f"{gid}: {out.get('ename')}: {first[0][:160] if first else ''}")
                break
    return lines


def autograde_student(lab: str, student: str, notebook: Path, base_gradebook: Path, workroot: Path, *,
                      seed: str, cell_timeout: int | None = None,
                      student_timeout: float = DEFAULT_STUDENT_TIMEOUT,
                      extra_env: dict[str, str] | None = None) -> tuple[StudentResult, Path]:
    """Autograde one student in a scratch course of their own. Returns the result and the
    scratch gradebook (to merge)."""
    from nbgrader.api import Gradebook, MissingEntry

    course = workroot / student
    if course.exists():
        shutil.rmtree(course)
    _write_config(course, cell_timeout=cell_timeout)
    shutil.copy(base_gradebook, course / "gradebook.db")
    (course / "source" / lab).mkdir(parents=True)
    sub = course / "submitted" / student / lab
    sub.mkdir(parents=True)
    shutil.copy(notebook, sub / f"{lab}.ipynb")
    env = {SEED_ENV: seed, **(extra_env or {})}
    start = time.monotonic()
    res = _nbgrader(["autograde", lab, f"--student={student}", "--force"], course,
                    timeout=student_timeout, env=env)
    seconds = time.monotonic() - start
    result = StudentResult(student, graded=False, seconds=seconds)
    graded_nb = course / "autograded" / student / lab / f"{lab}.ipynb"
    log = res.stdout
    if res.returncode == -9:
        result.reason = f"grading took longer than {student_timeout:.0f} s and was stopped"
        return result, course / "gradebook.db"
    if "DeadKernelError" in log or "Kernel died" in log or "kernel died" in log:
        result.reason = "the kernel died while running the notebook (out of memory, a crash, or os._exit?)"
        return result, course / "gradebook.db"
    try:
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=COURSE_ID) as gb:
            snb = gb.find_submission_notebook(lab, lab, student)
            result.scores = {g.name: float(g.score or 0.0) for g in snb.grades}
            result.max_score = float(sum(g.max_score for g in snb.grades))
    except MissingEntry:
        tail = "\n".join(log.strip().splitlines()[-3:])
        result.reason = f"nbgrader could not grade it: {tail[-300:]}"
        return result, course / "gradebook.db"
    if res.returncode != 0 or not graded_nb.exists():
        tail = [ln for ln in log.splitlines() if "ERROR" in ln or "Error" in ln][-2:]
        result.reason = "nbgrader failed: " + (" | ".join(tail)[-300:] or f"exit code {res.returncode}")
        return result, course / "gradebook.db"
    result.graded = True
    result.score = sum(result.scores.values())
    result.autograded = graded_nb
    result.notes.extend(_cell_errors(graded_nb, result.scores))
    return result, course / "gradebook.db"


def merge_gradebook(main_db: Path, student_db: Path, lab: str, student: str) -> None:
    """Copy one student's rows from a scratch gradebook into the main one.

    Both start as copies of the same assignment gradebook, so the assignment's rows share
    their keys and are skipped; the student's submission rows are new.
    """
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{main_db}", course_id=COURSE_ID) as gb:
        try:
            gb.remove_submission(lab, student)      # a regrade replaces the old grades
        except MissingEntry:
            pass
    con = sqlite3.connect(main_db)
    try:
        con.execute("ATTACH DATABASE ? AS s", (str(student_db),))
        tables = [r[0] for r in con.execute("SELECT name FROM s.sqlite_master WHERE type='table'")
                  if r[0] != "alembic_version" and not r[0].startswith("sqlite_")]
        for table in tables:
            con.execute(f'INSERT OR IGNORE INTO main."{table}" SELECT * FROM s."{table}"')
        con.commit()
        con.execute("DETACH DATABASE s")
    finally:
        con.close()


def grade(lab: str, submissions: str | Path, out: str | Path, *, root: str | Path | None = None,
          secret: str | None = None, jobs: int = 1, cell_timeout: int | None = None,
          student_timeout: float = DEFAULT_STUDENT_TIMEOUT, accept_renamed: bool = False,
          feedback: bool = True, progress: bool = True, extra_env: dict[str, str] | None = None,
          echo=print) -> list[StudentResult]:
    """Grade every submission of ``lab``; write OUT/gradebook.db, OUT/feedback/, OUT/grades.csv."""
    from nbgrader.api import Gradebook

    root = repo_root(root)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    secret = load_secret(root, secret)
    scratch = Path(tempfile.mkdtemp(prefix="gpudl-grade-"))
    try:
        released = generate(lab, root, out, cell_timeout=cell_timeout)
        released_nb = nbformat.read(str(released), as_version=4)
        base_gradebook = scratch / "base-gradebook.db"
        shutil.copy(out / "gradebook.db", base_gradebook)
        max_score = float(sum(notebooks.graded_cells(released_nb).values()))
        subs = find_submissions(submissions, lab, workdir=scratch, accept_renamed=accept_renamed)
        if not subs:
            raise FileNotFoundError(f"no submissions found in {submissions}")
        echo(f"grading {len(subs)} submission(s) of {lab} ({max_score:g} points), {jobs} at a time")

        def one(sub: Submission) -> StudentResult:
            if sub.notebook is None:
                return StudentResult(sub.student, False, max_score=max_score, reason=sub.problem)
            problem, notes = inspect_submission(sub.notebook, released_nb)
            if problem:
                return StudentResult(sub.student, False, max_score=max_score, reason=problem)
            try:
                result, db = autograde_student(lab, sub.student, sub.notebook, base_gradebook, scratch / "courses",
                                               seed=student_seed(secret, lab, sub.student),
                                               cell_timeout=cell_timeout, student_timeout=student_timeout,
                                               extra_env=extra_env)
            except Exception as exc:  # noqa: BLE001 - one broken submission must not stop the others
                return StudentResult(sub.student, False, max_score=max_score, reason=f"grading failed: {exc}")
            result.max_score = result.max_score or max_score
            result.notes[:0] = notes
            result.gradebook = db
            return result

        bar = None
        if progress and sys.stderr.isatty():
            from tqdm.auto import tqdm
            bar = tqdm(total=len(subs), desc=f"grading {lab}", unit="student")
        results: list[StudentResult] = []
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for result in pool.map(one, subs):
                results.append(result)
                if bar:
                    bar.update(1)
                echo(result.line())
        if bar:
            bar.close()

        with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=COURSE_ID) as gb:
            for r in results:
                gb.update_or_create_student(r.student)
        for r in results:
            if r.gradebook is not None and r.gradebook.exists():
                merge_gradebook(out / "gradebook.db", r.gradebook, lab, r.student)
            if r.graded and r.autograded:
                dest = out / "autograded" / r.student / lab
                if dest.exists():
                    shutil.rmtree(dest)
                shutil.copytree(r.autograded.parent, dest)
                r.autograded = dest / r.autograded.name
        if feedback and any(r.graded for r in results):
            res = _nbgrader(["generate_feedback", lab, "--force"], out)
            if res.returncode != 0:
                echo(f"warning: feedback generation failed:\n{res.stdout[-1500:]}")
        write_csv(out / "grades.csv", results, notebooks.graded_cells(released_nb))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def write_csv(path: Path, results: list[StudentResult], cells: dict[str, float]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "status", "score", "max_score", "percent", "reason", "notes", *cells])
        for r in sorted(results, key=lambda r: r.student):
            pct = 100.0 * r.score / r.max_score if r.max_score else 0.0
            w.writerow([r.student, "graded" if r.graded else "not graded", f"{r.score:g}", f"{r.max_score:g}",
                        f"{pct:.1f}", r.reason, " | ".join(r.notes),
                        *[f"{r.scores.get(c, 0.0):g}" for c in cells]])


def read_scores(path: Path) -> dict[str, dict[str, Any]]:
    """grades.csv as {student: row} (numbers as floats), for tests and reports."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for row in rows:
        parsed: dict[str, Any] = dict(row)
        for k, v in row.items():
            if k not in ("student", "status", "reason", "notes"):
                try:
                    parsed[k] = float(v)
                except ValueError:
                    pass
        out[row["student"]] = parsed
    return out

