"""The nbgrader pipeline: release labs from solutions, grade a class one student at a time.

``solutions/LAB/LAB.ipynb`` is the instructor's notebook (solutions and hidden tests);
``labs/LAB/LAB.ipynb`` is what ``nbgrader generate_assignment`` makes of it. Grading a
folder of submissions (or an LMS zip) goes:

1. the assignment is generated once for the batch (``OUT/gradebook.db``, ``OUT/release``);
2. every submission is found and inspected without running it (``gpudl_instructor.submissions``): one
   row each, symlinks and oversized files refused, deleted cells restored in place;
3. each student is autograded in a process of their own (``gpudl_instructor.autograde``), started from a
   server that has already imported nbgrader and torch, several at a time (up to the cores and
   the memory; on a GPU machine several per GPU, sharing it under a lease that gives timed checks
   the device alone, ``gpudl_instructor.gpulease``): the kernel runs in a sandbox (``gpudl_instructor.sandbox``), checks
   run in a checker outside it with the student's seed (``gpudl_instructor.checker``), a test
   cell scores only when nbgrader and the checker both pass it, and the feedback page is
   made and sanitized there (``gpudl_instructor.feedback``); the whole process is stopped at the
   student's time limit;
4. each student's grades are merged into ``OUT/gradebook.db``; only the graded notebook and
   the feedback page are copied into ``OUT``; ``OUT/grades.csv`` is rebuilt from the
   gradebook after every run (every student graded so far, written atomically).

Public names: ``configure_nbgrader``, ``repo_root``, ``lab_names``, ``generate``,
``release``, ``autograde_student``, ``grade``, ``StudentResult``, ``student_seed``,
``load_secret``, ``merge_gradebook``, ``write_csv``, ``read_scores``, ``plan_jobs``.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import multiprocessing
import os
import queue
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import nbformat

from gpudl import notebooks
from .course import lab_names, repo_root  # noqa: F401 - part of the pipeline's API
from .grades import STATUS_FILE, read_scores, update_status, write_csv  # noqa: F401 - part of the pipeline's API
from .submissions import (Submission, find_submissions, inspect_submission, repair, review_flags,  # noqa: F401
                          split_name)

from .nbgrader_setup import (COURSE_ID, DEFAULT_CELL_TIMEOUT, DEFAULT_STUDENT_TIMEOUT, IGNORE_STDERR,  # noqa: F401
                             SECRET_ENV, SECRET_FILE, SEED_ENV, configure_nbgrader)


# --- course directories ------------------------------------------------------------------

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
        "from gpudl_instructor.pipeline import configure_nbgrader\n"
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
    log = _generate_in_process(lab, course, cell_timeout)
    released = course / "release" / lab / f"{lab}.ipynb"
    if log is not None or not released.is_file():
        raise RuntimeError(f"nbgrader generate_assignment {lab} failed:\n{(log or '')[-4000:]}")
    return released


def _alembic_in_process() -> None:
    """nbgrader asks the ``alembic`` command for its schema's version, in a process of its own,
    each time it creates a gradebook (5 s on a 2-core machine); ask alembic here, once."""
    import nbgrader.api as api

    if getattr(api.get_alembic_version, "__gpudl__", False):
        return
    original = api.get_alembic_version
    head: list[str] = []

    def get_alembic_version() -> str:
        if not head:
            try:
                from alembic.config import Config as AlembicConfig
                from alembic.script import ScriptDirectory
                with api._temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
                    head.append(ScriptDirectory.from_config(AlembicConfig(ini)).get_current_head())
            except Exception:  # noqa: BLE001 - nbgrader's own way still works
                head.append(original())
        return head[0]

    get_alembic_version.__gpudl__ = True
    api.get_alembic_version = get_alembic_version


def _generate_in_process(lab: str, course: Path, cell_timeout: int | None) -> str | None:
    """``nbgrader generate_assignment LAB --force`` in this process (nbgrader costs seconds to
    import; a process of its own would pay them again). Returns None, or nbgrader's log on failure."""
    import logging
    from traitlets.config import Config
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory

    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")     # nbgrader runs `alembic`
    _alembic_in_process()
    c = Config()
    configure_nbgrader(c, cell_timeout=cell_timeout)
    c.CourseDirectory.root = str(course)
    c.CourseDirectory.assignment_id = lab
    c.GenerateAssignment.force = True
    buf = io.StringIO()
    converter = GenerateAssignment(coursedir=CourseDirectory(config=c), config=c)
    converter.log.handlers[:] = [logging.StreamHandler(buf)]
    converter.log.propagate = False
    converter.log.setLevel(logging.WARNING)
    try:
        converter.start()
    except Exception as exc:  # noqa: BLE001 - the caller raises with the log
        return buf.getvalue() + f"\n{type(exc).__name__}: {exc}"
    return None


def release(lab: str | None = None, root: str | Path | None = None) -> list[Path]:
    """Regenerate ``labs/LAB/`` from ``solutions/LAB/`` (every lab when ``lab`` is None), and the
    expected values of its visible cases in the course edition (``gpudl_instructor.expected``)."""
    from . import expected

    root = repo_root(root)
    written = []
    names = [lab] if lab else lab_names(root)
    written += expected.write(names, root)
    for name in names:
        with tempfile.TemporaryDirectory(prefix="gpudl-release-") as tmp:
            released = generate(name, root, Path(tmp))
            dest = root / "labs" / name
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(released.parent, dest)
            written.append(dest / released.name)
    return written


# --- grading -----------------------------------------------------------------------------

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
    feedback: Path | None = None     # the sanitized feedback page, in the scratch course
    name: str = ""
    marks: dict[str, float] = field(default_factory=dict)   # where the seconds went (the child's clock)
    slowest_cells: dict[str, float] = field(default_factory=dict)
    lms: dict[str, Any] = field(default_factory=dict)       # {"lms", "id", "late"} when the LMS named the file
    submitted_at: datetime | None = None   # when the submitted file was last written (UTC): the formgrader's timestamp

    def line(self) -> str:
        if not self.graded:
            return f"{self.student}: NOT GRADED ({self.reason}); score 0/{self.max_score:g}"
        extra = f"  [{'; '.join(self.notes)}]" if self.notes else ""
        return f"{self.student}: {self.score:g}/{self.max_score:g} in {self.seconds:.0f} s{extra}"


def student_seed(secret: str, lab: str, student: str) -> str:
    return hashlib.sha256(f"{secret}:{lab}:{student}".encode()).hexdigest()[:32]


def load_secret(root: Path | None, explicit: str | None = None, echo: Callable[[str], Any] = print) -> str:
    """The instructor's secret: --secret, $GPUDL_SECRET, or .gpudl-secret (made once, git-ignored)."""
    if explicit:
        return explicit
    if os.environ.get(SECRET_ENV):
        return os.environ[SECRET_ENV]
    path = (root or Path.cwd()) / SECRET_FILE
    if not path.exists():
        path.write_text(secrets.token_hex(16) + "\n")
        path.chmod(0o600)
        echo(f"created the grading secret {path} (mode 600, git-ignored). Keep it and back it up: every student's "
             "hidden cases derive from it, grading again with another secret draws other cases, and anyone who has "
             "it can know them in advance.")
    return path.read_text().strip()


_UNDEFINED = re.compile(r"name '(\w+)' is not defined")
_CELL_FILE = re.compile(r"\((?:\d+|<[^>]*>)\.py, line (\d+)\)")       # IPython's name for a cell's code


def _defines(source: str, name: str) -> bool:
    """Whether a cell's source binds ``name`` at its top level (read as text: it may not parse)."""
    return re.search(rf"^(?:def|class)\s+{name}\b|^{name}\s*(?::[^=\n]*)?=(?!=)", source, re.M) is not None


def _cell_errors(nb_path: Path, graded: Iterable[str]) -> list[str]:
    """One line per graded cell that failed (its whole reason), and per cell that timed out. When a
    graded cell's failure may follow from an error in a cell of the student's own (a solution cell, or
    one they added), it names that error too: for a NameError, the own cell that should have defined
    the name and raised (by its text, else the nearest own cell above that raised: an unanswered
    question's); after a syntax error in an own cell, that syntax error (not the errors it leads to).
    A test failing for its own reason keeps it. IPython's file name for a cell reads as the cell's line."""
    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception:  # noqa: BLE001
        return []
    graded = set(graded)
    lines: list[str] = []
    own_errors: list[tuple[str, str]] = []        # (what to say, the cell's source) of each own cell that raised
    first_syntax = ""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        gid = nbg.get("grade_id", f"cell {index}")
        for out in cell.get("outputs", []):
            if out.get("output_type") != "error":
                continue
            evalue = _CELL_FILE.sub(r"(line \1 of the cell)", out.get("evalue") or "")
            reason = " / ".join(ln.strip() for ln in evalue.splitlines() if ln.strip())
            if out.get("ename") in ("CellTimeoutError", "KeyboardInterrupt"):   # nbgrader interrupts at the limit
                lines.append(f"cell '{gid}' timed out (interrupted at the per-cell limit)")
            elif gid in graded:
                missing = _UNDEFINED.search(evalue) if out.get("ename") == "NameError" else None
                cause = first_syntax
                if missing and not cause and own_errors:
                    named = [said for said, source in own_errors if _defines(source, missing.group(1))]
                    cause = named[-1] if named else own_errors[-1][0]
                lines.append(f"{gid}: {out.get('ename')}: {reason[:400]}"
                             + (f" (the error in your own cells it follows from: {cause})" if cause else ""))
            elif not nbg.get("locked"):
                where = f"cell '{gid}'" if nbg.get("grade_id") else f"cell {index + 1}"
                said = f"{where}: {out.get('ename')}: {reason[:200]}"
                own_errors.append((said, cell.source))
                if not first_syntax and out.get("ename") in ("SyntaxError", "IndentationError", "TabError"):
                    first_syntax = said
            break
    return lines


_CONTEXT: Any = None


def _context() -> Any:
    """Processes for students, forked from a server that has imported nbgrader, torch and gpudl."""
    global _CONTEXT
    if _CONTEXT is None:
        # torch.cuda.is_available() starts the CUDA driver, and a process forked after that cannot use
        # CUDA; asked through NVML it does not (the server forks every student's process).
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["gpudl_instructor.autograde_server"])
        _CONTEXT = ctx
    return _CONTEXT


def _start_server() -> None:
    """Start the server students' processes fork from (it imports nbgrader, torch, gpudl)."""
    from multiprocessing import forkserver

    _context()
    try:
        forkserver.ensure_running()
    except Exception:  # noqa: BLE001 - the first student starts it instead
        pass


def _grade_in_child(job: Any, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run ``autograde.child_main`` for ``job`` in a process of its own; stop it (and everything
    its sandbox started) at ``timeout`` seconds."""
    from . import autograde, sandbox

    result = Path(job.workdir) / "result.json"
    result.unlink(missing_ok=True)
    proc = _context().Process(target=autograde.child_main, args=(job.__dict__, str(result), env, time.time()))
    proc.start()
    start = time.monotonic()
    waited = Path(job.workdir) / autograde.LEASE_WAITED
    while proc.is_alive():
        # The time spent waiting for a shared device's lease (between cells) is not the student's.
        try:
            extra = min(float(waited.read_text() or 0), timeout)
        except (OSError, ValueError):
            extra = 0.0
        left = start + timeout + extra - time.monotonic()
        if left <= 0:
            break
        proc.join(min(left, 5.0))
    timed_out = proc.is_alive()
    if timed_out:
        proc.kill()
        proc.join(30)
    if job.uid is not None:
        sandbox.kill_uid(job.uid)
    if timed_out:
        return {"status": "timeout", "reason": f"grading took longer than {timeout:.0f} s and was stopped"}
    if not result.exists():
        return {"status": "error", "reason": f"the grading process ended without a result (exit code {proc.exitcode})"}
    return json.loads(result.read_text())


def autograde_student(lab: str, student: str, notebook: Path, base_gradebook: Path, workroot: Path, *,
                      seed: str, cell_timeout: int | None = None,
                      student_timeout: float = DEFAULT_STUDENT_TIMEOUT,
                      extra_env: dict[str, str] | None = None, sandbox: bool = False,
                      limits: dict[str, int] | None = None, outputs: dict[str, int] | None = None,
                      expected: dict[str, set] | None = None, source: Path | None = None,
                      feedback: bool = False, gpu_slot: int | None = None,
                      root: str | Path | None = None, lease: str | None = None,
                      gpu_fraction: float | None = None, gpu_gib: float = 0.0) -> tuple[StudentResult, Path]:
    """Autograde one student in a process and scratch course of their own. Returns the result
    and the scratch gradebook (to merge). ``notebook`` is graded as given (``grade`` repairs
    submissions before). ``expected``: the checks each test cell must run (default: read from
    ``source``, the instructor's notebook, by default ``solutions/LAB/LAB.ipynb``). ``lease``: the
    lock file of the device this student shares (``gpudl_instructor.gpulease``); ``gpu_fraction``:
    the share of the GPU's memory the kernel may allocate."""
    from nbgrader.api import Gradebook, MissingEntry

    from gpudl import hardware
    from . import autograde, sandbox as sb
    from .checker import expected_checks

    if expected is None:
        source = source or repo_root(root) / "solutions" / lab / f"{lab}.ipynb"
        expected = expected_checks(nbformat.read(str(source), as_version=4))
    work = Path(workroot) / student
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    device = os.environ.get("GPUDL_DEVICE") or hardware.device()
    uid = sb._pick_uid() if (sandbox and os.geteuid() == 0) else None
    try:
        course_root = str(repo_root(root))
    except FileNotFoundError:
        course_root = ""
    job = autograde.Job(lab=lab, student=student, notebook=str(notebook), base_gradebook=str(base_gradebook),
                        workdir=str(work), seed=seed, expected={k: sorted(map(list, v)) for k, v in expected.items()},
                        cell_timeout=int(cell_timeout or os.environ.get("GPUDL_CELL_TIMEOUT", DEFAULT_CELL_TIMEOUT)),
                        sandbox=sandbox, limits=dict(limits or {}), outputs=dict(outputs or {}),
                        gpu=device == "cuda", uid=uid, device=device, feedback=feedback,
                        course_root=course_root, lease=lease or "", gpu_fraction=float(gpu_fraction or 0.0),
                        gpu_gib=gpu_gib)
    env = dict(extra_env or {})
    if gpu_slot is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu_slot)
    start = time.monotonic()
    report = _grade_in_child(job, env, student_timeout)
    course = work / "course"
    result = StudentResult(student, graded=False, seconds=time.monotonic() - start)
    result.marks = report.get("marks", {})
    result.slowest_cells = report.get("slowest_cells", {})
    db = course / "gradebook.db"
    if report.get("status") != "graded":
        result.reason = report.get("reason") or "grading failed"
        return result, db
    try:
        with Gradebook(f"sqlite:///{db}", course_id=COURSE_ID) as gb:
            snb = gb.find_submission_notebook(lab, lab, student)
            result.scores = {g.name: float(g.score or 0.0) for g in snb.grades}
            result.max_score = float(sum(g.max_score for g in snb.grades))
    except (MissingEntry, Exception) as exc:  # noqa: BLE001
        result.reason = f"nbgrader could not grade it ({type(exc).__name__})"
        return result, db
    graded_nb = course / "autograded" / student / lab / f"{lab}.ipynb"
    if not graded_nb.exists():
        result.reason = "nbgrader wrote no graded notebook"
        return result, db
    if report.get("checker_out_of_memory"):
        # The instructor's own check ran out of memory (a GPU the class shares, the host's): the cell's
        # zero says nothing of the student's work, so no score is kept; the row asks to grade again.
        errors = report["checker_out_of_memory"]
        result.reason = (f"the grader's own check ran out of memory, not the student's work ({errors[0][:300]}"
                         + (f"; {len(errors) - 1} more" if len(errors) > 1 else "")
                         + "): grade this student again (their submission alone, into the same --out), with "
                         "fewer students at a time if it recurs")
        return result, db
    result.graded = True
    result.score = sum(result.scores.values())
    result.autograded = graded_nb
    page = course / "feedback" / student / lab / f"{lab}.html"
    result.feedback = page if page.exists() else None
    result.notes.extend(_cell_errors(graded_nb, result.scores))
    result.notes.extend(f"the grader's check failed (tell the course staff): {e}" for e in report.get("checker_errors", []))
    return result, db


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


def _prepare(sub: Submission, released: nbformat.NotebookNode, scratch: Path) -> tuple[Path | None, str, list[str]]:
    """The copy of a submission that is graded, or why there is none; and the notes."""
    if sub.notebook is None:
        return None, sub.problem, []
    problem, notes = inspect_submission(sub.notebook, released)
    if problem:
        return None, problem, []
    try:
        notes += review_flags(sub.notebook, released)
        return repair(sub.notebook, released, scratch / "repaired" / f"{sub.student}.ipynb"), "", notes
    except ValueError as exc:
        return None, str(exc), []


def _submitted_at(notebook: Path) -> datetime | None:
    """When the student's notebook was last written, in UTC without a zone (as nbgrader stores it)."""
    try:
        return datetime.fromtimestamp(os.stat(notebook).st_mtime, timezone.utc).replace(tzinfo=None)
    except OSError:
        return None


def _gpus(device: str) -> int:
    if device != "cuda":
        return 0
    try:
        import torch
        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001
        return 0


HOST_GIB_PER_STUDENT = 2.0      # the grader's own process for a student (nbgrader, the checker), beside the kernel
GPU_GIB_PER_STUDENT = 8.0       # what one student's notebook may need of a shared GPU
GPU_USABLE = 0.9                # of a GPU's memory, shared out (CUDA contexts and the checkers take the rest)


def plan_jobs(*, gpus: int, cores: int, host_gib: float, gpu_gib: float, jobs: int | None = None,
              per_gpu: int | None = None, kernel_gib: float = 6.0) -> tuple[int, int]:
    """(students graded at once, students per GPU; 0 on a machine without one).

    At most one student per core and as many as the host's memory holds (each student's kernel may
    use ``kernel_gib``, its grader ``HOST_GIB_PER_STUDENT`` more); on a GPU machine the students are
    spread over the GPUs, each GPU shared by ``per_gpu`` students (default: as many as its memory
    holds at ``GPU_GIB_PER_STUDENT`` each, and the cores allow). ``per_gpu=1``: one student per GPU."""
    if per_gpu is not None and per_gpu < 1:
        raise ValueError(f"--per-gpu must be 1 or more (1: each student has a GPU alone), got {per_gpu}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"--jobs must be 1 or more, got {jobs}")
    by_memory = max(1, int(host_gib // (kernel_gib + HOST_GIB_PER_STUDENT)))
    if not gpus:
        return (jobs or max(1, min(cores, by_memory))), 0
    if per_gpu is None:
        if jobs is not None:
            per_gpu = -(-jobs // gpus)
        else:
            by_gpu = int(gpu_gib * GPU_USABLE // GPU_GIB_PER_STUDENT) if gpu_gib else cores
            per_gpu = max(1, min(cores // gpus, by_gpu, by_memory // gpus))
    return min(jobs or gpus * per_gpu, gpus * per_gpu), per_gpu


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")


def thread_env(jobs: int, cores: int | None = None) -> dict[str, str]:
    """The thread pools of each of ``jobs`` students graded at once: a share of the cores each
    (``cores // jobs``, at least 1), so that BLAS, torch and numba in their kernels and checkers do
    not each start a thread per core and fight over them; empty for one student at a time, or where
    ``OMP_NUM_THREADS`` is set already (the instructor's choice)."""
    if jobs <= 1 or os.environ.get("OMP_NUM_THREADS"):
        return {}
    share = str(max(1, (cores or os.cpu_count() or 1) // jobs))
    return {name: share for name in THREAD_VARIABLES}


def _host_gib() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (OSError, ValueError):
        return 16.0


def _gpu_gib() -> float:
    """The memory of the smallest GPU here (nvidia-smi: asking torch would start CUDA in the grader);
    0 when unknown."""
    try:
        res = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30)
        sizes = [float(x) / 1024 for x in res.stdout.split()]
        return min(sizes) if res.returncode == 0 and sizes else 0.0
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0.0


def _device_key(slot: int | None) -> str:
    """The name of the device a worker's students run on, for its lease: the GPU as
    CUDA_VISIBLE_DEVICES names it (so two grading runs on one machine share the GPU's lease), or "cpu"."""
    if slot is None:
        return "cpu"
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return f"gpu-{visible[slot]}" if slot < len(visible) else f"gpu-{slot}"


# Labs whose checks start one process per GPU (lab 10: NCCL wants k GPUs for k ranks). On a machine
# of several GPUs each of their students sees every GPU, and the students graded at once share all
# of them, under one lease for the whole set.
WHOLE_MACHINE_LABS = frozenset({"lab10_multi_gpu"})


def whole_machine(lab: str, gpus: int) -> bool:
    """Whether ``lab``'s students each get every one of ``gpus`` GPUs (see ``WHOLE_MACHINE_LABS``)."""
    return gpus > 1 and lab in WHOLE_MACHINE_LABS


def plan_lab(lab: str, gpus: int, *, jobs: int | None = None, per_gpu: int | None = None,
             kernel_gib: float = 6.0) -> tuple[int, int]:
    """``plan_jobs`` for grading ``lab`` on this machine (its cores, host and GPU memory): a lab whose
    students each see every GPU is planned as on one GPU."""
    return plan_jobs(gpus=1 if whole_machine(lab, gpus) else gpus, cores=os.cpu_count() or 1,
                     host_gib=_host_gib(), gpu_gib=_gpu_gib() if gpus else 0.0, jobs=jobs, per_gpu=per_gpu,
                     kernel_gib=kernel_gib)


def placement(lab: str, gpus: int, jobs: int, slot: int) -> tuple[int | None, str]:
    """Where grading worker ``slot`` (of ``jobs``) puts its students: the GPU it makes visible to
    them (None: every GPU, or none on a CPU machine) and the name of the device for its lease."""
    if not gpus:
        return None, _device_key(None)
    if whole_machine(lab, gpus):
        return None, "gpu-" + "_".join(_device_key(i)[4:] for i in range(gpus))
    return ((slot % gpus) if jobs > 1 else None), _device_key(slot % gpus)


def grade(lab: str, submissions: str | Path, out: str | Path, *, root: str | Path | None = None,
          secret: str | None = None, jobs: int | None = None, cell_timeout: int | None = None,
          student_timeout: float = DEFAULT_STUDENT_TIMEOUT, accept_renamed: bool = False,
          feedback: bool = True, progress: bool = True, extra_env: dict[str, str] | None = None,
          sandbox: bool = True, limits: dict[str, int] | None = None, outputs: dict[str, int] | None = None,
          shard: tuple[int, int] | None = None, per_gpu: int | None = None,
          echo: Callable[[str], Any] = print) -> list[StudentResult]:
    """Grade every submission of ``lab``; write OUT/gradebook.db, OUT/feedback/, OUT/grades.csv.

    ``shard=(K, N)`` grades only the submissions of shard K of N (``gpudl_instructor.shards``) and
    records the split in OUT for ``gpudl merge``.

    ``jobs`` students are graded at once and, on a GPU machine, ``per_gpu`` share each GPU
    (``plan_jobs``: by default up to the cores and the memory); when several share a device, cells
    run under a shared lease of it and timed checks under an exclusive one (``gpudl_instructor.gpulease``),
    and each kernel's GPU memory is bounded to its share.

    ``sandbox=False`` runs kernels without the sandbox (``--unsafe-no-sandbox``); with
    ``sandbox=True`` on a machine where bubblewrap cannot make one, grading is refused."""
    from nbgrader.api import Gradebook

    from gpudl import hardware
    from . import sandbox as sb
    from .checker import expected_checks

    root = repo_root(root)
    out = Path(out).resolve()
    if sandbox:
        ok, why = sb.available()
        if not ok:
            raise RuntimeError(f"cannot grade in a sandbox here: {why}. Student code must not run unsandboxed; "
                               "if you trust every submission, pass --unsafe-no-sandbox")
    else:
        echo("WARNING: grading WITHOUT a sandbox (--unsafe-no-sandbox): student code runs as you, with your files")
    subs_path = Path(submissions)
    if not subs_path.exists() and not subs_path.is_symlink():
        raise FileNotFoundError(f"{subs_path} does not exist (a folder of submissions or an LMS zip is expected)")
    out.mkdir(parents=True, exist_ok=True)
    secret = load_secret(root, secret, echo=echo)
    device = os.environ.get("GPUDL_DEVICE") or hardware.device()
    gpus = _gpus(device)
    kernel_gib = (limits or {}).get("memory_bytes", 6 << 30) / 2**30
    gpu_gib = _gpu_gib() if gpus else 0.0
    whole = whole_machine(lab, gpus)              # every student sees every GPU
    jobs, per_gpu = plan_lab(lab, gpus, jobs=jobs, per_gpu=per_gpu, kernel_gib=kernel_gib)
    shared = jobs > 1 and (not gpus or per_gpu > 1)          # students share a device: leases, bounded GPU memory
    fraction = GPU_USABLE / per_gpu if gpus and per_gpu > 1 else None
    extra_env = {**thread_env(jobs), **(extra_env or {})}
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="gpudl-grade-"))
    warm = threading.Thread(target=_start_server, daemon=True)   # imports while the assignment is made
    warm.start()
    try:
        released_path = generate(lab, root, out, cell_timeout=cell_timeout)
        released_nb = nbformat.read(str(released_path), as_version=4)
        base_gradebook = scratch / "base-gradebook.db"
        shutil.copy(out / "gradebook.db", base_gradebook)
        cells = notebooks.graded_cells(released_nb)
        max_score = float(sum(cells.values()))
        expected = expected_checks(nbformat.read(str(root / "solutions" / lab / f"{lab}.ipynb"), as_version=4))
        subs = find_submissions(subs_path, lab, workdir=scratch, accept_renamed=accept_renamed)
        if not subs:
            raise FileNotFoundError(f"no submissions found in {subs_path}")
        if shard is not None:
            from .shards import in_shard, write_manifest
            everyone = [s.student for s in subs]
            subs = [s for s in subs if in_shard(s.student, *shard)]
            write_manifest(out, lab, *shard, [s.student for s in subs], everyone)
            echo(f"shard {shard[0]}/{shard[1]}: {len(subs)} of {len(everyone)} submission(s)")
        echo(f"grading {len(subs)} submission(s) of {lab} ({max_score:g} points), {jobs} at a time"
             + (f", {per_gpu} per GPU" if gpus else "") + (f" (each sees all {gpus} GPUs)" if whole else "")
             + (", each in a sandbox" if sandbox else ""))

        todo: queue.Queue = queue.Queue()
        for sub in subs:
            todo.put(sub)
        results: list[StudentResult] = []
        lock, prepare_lock = threading.Lock(), threading.Lock()
        bar = None
        if progress and sys.stderr.isatty():
            from tqdm.auto import tqdm
            bar = tqdm(total=len(subs), desc=f"grading {lab}", unit="student")

        def worker(slot: int) -> None:
            gpu_slot, device_key = placement(lab, gpus, jobs, slot)
            lease = None
            if shared:
                from .gpulease import lease_path
                lease = str(lease_path(device_key))
            while True:
                try:
                    sub = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    with prepare_lock:          # CPython 3.11's ast.parse is not safe in threads at once
                        path, problem, notes = _prepare(sub, released_nb, scratch)
                except Exception as exc:  # noqa: BLE001 - a row with the reason, never a student lost
                    path, problem, notes = None, f"the grader could not read it ({type(exc).__name__}: {exc})", []
                if path is None:
                    r = StudentResult(sub.student, False, max_score=max_score, reason=problem, name=sub.name)
                    r.lms = {"lms": sub.lms, "id": sub.lms_id, "late": sub.late} if sub.lms else {}
                else:
                    try:
                        r, db = autograde_student(
                            lab, sub.student, path, base_gradebook, scratch / "courses",
                            seed=student_seed(secret, lab, sub.student), cell_timeout=cell_timeout,
                            student_timeout=student_timeout, extra_env=extra_env, sandbox=sandbox, limits=limits,
                            outputs=outputs, expected=expected, feedback=feedback,
                            gpu_slot=gpu_slot, root=root, lease=lease, gpu_fraction=fraction,
                            gpu_gib=gpu_gib)
                        r.gradebook = db
                    except Exception as exc:  # noqa: BLE001 - one broken submission must not stop the others
                        r = StudentResult(sub.student, False, reason=f"grading failed: {exc}")
                    r.max_score = r.max_score or max_score
                    r.notes[:0] = notes
                    r.name = sub.name
                    r.submitted_at = _submitted_at(sub.notebook)
                    r.lms = {"lms": sub.lms, "id": sub.lms_id, "late": sub.late} if sub.lms else {}
                with lock:
                    results.append(r)
                    if bar:
                        bar.update(1)
                    echo(r.line())

        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(max(1, jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if bar:
            bar.close()
        graded_at = time.monotonic()

        with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=COURSE_ID) as gb:
            for r in results:      # names for the formgrader: "Jane Doe" from Moodle, "ada-lovelace" from a folder
                words = (r.name or "").split()
                first, last = (" ".join(words[:-1]), words[-1]) if len(words) > 1 else split_name(r.student)
                gb.update_or_create_student(r.student, first_name=first, last_name=last)
        for r in results:
            if r.gradebook is not None and r.gradebook.exists() and r.graded:
                merge_gradebook(out / "gradebook.db", r.gradebook, lab, r.student)
            for folder, src in (("autograded", r.autograded), ("feedback", r.feedback)):
                dest_dir = out / folder / r.student / lab
                if dest_dir.exists():
                    shutil.rmtree(dest_dir)
                if r.graded and src is not None and src.exists():
                    dest_dir.mkdir(parents=True)
                    shutil.copy(src, dest_dir / src.name)       # the notebook or page alone, no student files
            if r.graded and r.autograded is not None:
                r.autograded = out / "autograded" / r.student / lab / r.autograded.name
        with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=COURSE_ID) as gb:
            for r in results:      # the formgrader's timestamps (nbgrader reads them from its exchange, unused here)
                if r.graded and r.submitted_at is not None:
                    gb.update_or_create_submission(lab, r.student, timestamp=r.submitted_at)
        update_status(out, lab, results)
        write_csv(out / "grades.csv", lab, out)
    finally:
        if os.environ.get("GPUDL_KEEP_SCRATCH"):
            echo(f"scratch kept (GPUDL_KEEP_SCRATCH): {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    minutes = (time.monotonic() - started) / 60
    echo(f"{len(results)} student(s) in {minutes * 60:.0f} s: {len(results) / minutes:.1f} students per minute"
         f" (the class's gradebook, notebooks and feedback gathered in {time.monotonic() - graded_at:.1f} s)")
    return results
