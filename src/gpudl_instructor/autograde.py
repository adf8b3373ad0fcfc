"""One student's notebook autograded by nbgrader, with its kernel in a sandbox and its checks
judged by a checker outside it.

``autograde_one(job)`` runs in a process of its own for each student (``gpudl grade`` starts it
from a server that has already imported nbgrader, torch and gpudl). It builds a scratch course
holding only that student's notebook and a copy of the assignment's gradebook, starts the
checker (``gpudl_instructor.checker.CheckerServer``) with the student's seed, and runs nbgrader's
autograde converter in this process with these preprocessors in place of nbgrader's own:

``GradedExecute``   nbgrader's Execute, whose kernel starts inside ``gpudl_instructor.sandbox.Sandbox``
                    (or, with ``--unsafe-no-sandbox``, without); it tells the checker which test
                    cell runs, runs each cell under the shared lease of a device students share
                    (``gpudl_instructor.gpulease``; the kernel's GPU memory bounded to its share),
                    bounds what the kernel may print (per cell and per notebook), and
                    after the run gives each test cell the checker's verdict: a cell the checker
                    failed gets an error output, so nbgrader scores it 0 (the stricter of the two)
``QuietTests``      stderr of a graded test cell (a library's warning, a thread, a file
                    descriptor) becomes stdout: nbgrader would score the cell 0 for it

Public names: ``Job``, ``autograde_one``, ``GradedExecute``, ``QuietTests``, ``OutputLimits``,
``SandboxKernelManager``.
"""
from __future__ import annotations

import importlib
import io
import json
import os
import pkgutil
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager
from nbclient.util import run_sync
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool

from .checker import CheckerServer, Verdict
from .sandbox import Limits, Sandbox

COURSE_ID = "gpudl"
LEASE_WAITED = "lease-waited"     # seconds this student waited for the device's lease, for the grader's clock
SLOWEST_CELLS = 3                 # the cells named in a student's timings (grading-status.json)
SHARED_WAIT_S = 60.0              # the longest a cell waits for a timed check of another student to end
_SECRET_NAMES = ("GPUDL_SECRET", "GPUDL_GRADING_SEED")
# Set by the project's tests: a lab's passing test cells must not write to stderr at all (students'
# own Validate counts it as a failure), so the grader keeps it where the tests can see it.
KEEP_STDERR = "GPUDL_KEEP_STDERR"


@dataclass(frozen=True)
class OutputLimits:
    """What a graded kernel may print: bytes per cell and per notebook (text and images)."""

    cell_bytes: int = 1 << 20
    notebook_bytes: int = 8 << 20
    # One message from the kernel; a larger one is refused (the student is not graded, with the reason).
    # Well above what printing makes: the kernel sends a cell's stream output in batches, 50 MB at once.
    message_bytes: int = 256 << 20


@dataclass
class Job:
    """Everything one student's grading needs (plain data: it crosses to a child process)."""

    lab: str
    student: str
    notebook: str                  # the sanitized submission
    base_gradebook: str
    workdir: str
    seed: str
    expected: dict[str, list[list[Any]]]       # test cell -> [[check, hidden], ...]
    cell_timeout: int = 180
    sandbox: bool = True
    limits: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    gpu: bool = False
    uid: int | None = None
    device: str = "cpu"
    feedback: bool = False
    course_root: str = ""
    lease: str = ""                # the lock file of the device this student shares ("": none)
    gpu_fraction: float = 0.0      # the share of the GPU's memory the kernel may allocate (0: no bound)
    gpu_gib: float = 0.0           # the GPU's memory (0: unknown), for the out-of-memory note


# The grading of the student this process grades (one per process).
_JOB: dict[str, Any] = {}


def _size(out: NotebookNode) -> int:
    if out.get("output_type") == "stream":
        return len(out.get("text", ""))
    size = 0
    for value in (out.get("data") or {}).values():
        size += len(value) if isinstance(value, str) else len(json.dumps(value))
    return size + len(out.get("evalue", "")) + sum(len(t) for t in out.get("traceback", []))


class SandboxKernelManager(AsyncKernelManager):
    """A kernel started inside the job's sandbox, over Unix sockets in the sandbox's kernel
    folder, interrupted by message (a signal would not cross bubblewrap's new session)."""

    gpudl_sandbox: Sandbox | None = None

    @property
    def kernel_spec(self):  # type: ignore[override]
        spec = super().kernel_spec
        if spec is not None:
            spec.interrupt_mode = "message"
        return spec

    def client(self, **kwargs: Any):
        """The client, whose sockets refuse a message from the kernel over ``OutputLimits.message_bytes``
        (zmq drops it and the connection, which comes back: the cell's output ends there, the next cell runs).
        The option is the context's default, so it holds for the sockets ``start_channels`` makes."""
        import zmq
        kc = super().client(**kwargs)
        kc.context.setsockopt(zmq.MAXMSGSIZE, _JOB["outputs"].message_bytes)
        return kc

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file, *(extra_arguments or [])]
        return self.gpudl_sandbox.command(cmd) if self.gpudl_sandbox is not None else cmd

    async def _async_pre_start_kernel(self, **kw: Any):
        kw.pop("cwd", None)
        kw["cwd"] = str(Path(self.connection_file).parent)
        # What the kernel process itself prints (not its cells' output) goes to a log.
        log = open(Path(_JOB["workdir"]) / "kernel.log", "ab")  # noqa: SIM115 - closed with the process
        kw["stdout"] = kw["stderr"] = log
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if self.gpudl_sandbox is not None:
            self.gpudl_sandbox.give(Path(self.connection_file))
        else:           # no sandbox: the kernel still talks to the checker, never sees the secret
            env = {k: v for k, v in (kw.get("env") or os.environ).items() if k not in _SECRET_NAMES}
            env.update(_JOB.get("kernel_env", {}))
            kw["env"] = env
        return cmd, kw


class GradedExecute(Execute):
    """nbgrader's Execute with the sandboxed kernel, the checker and bounded output."""

    def create_kernel_manager(self):
        km = SandboxKernelManager(kernel_name="python3", config=self.config, transport="ipc")
        kernel_dir = Path(_JOB["kernel_dir"])
        km.connection_file = str(kernel_dir / "kernel.json")
        km.ip = str(kernel_dir / "ipc")
        km.gpudl_sandbox = _JOB.get("sandbox")
        self.km = km
        return km

    async def async_start_new_kernel_client(self):
        start = time.monotonic()
        kc = await super().async_start_new_kernel_client()
        _JOB.setdefault("marks", {})["kernel_start"] = time.monotonic() - start
        return kc

    # nbconvert starts the kernel through the synchronous name, which nbclient binds to its own
    # coroutine when the class is made: bound again here, or the override above would never run.
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def preprocess(self, nb, resources=None, km=None):
        self._gpudl_cell_bytes: dict[int, int] = {}
        self._gpudl_total = 0
        self._gpudl_cut: set[int] = set()
        try:
            nb, resources = super().preprocess(nb, resources, km)
        finally:
            sandbox = _JOB.get("sandbox")
            if sandbox is not None:
                sandbox.kill()
        if _JOB.get("gpu_fraction"):
            _note_out_of_memory(nb, _JOB["gpu_fraction"])
        _apply_verdicts(nb, _JOB.get("checker"), _JOB.get("expected", {}))
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        checker: CheckerServer | None = _JOB.get("checker")
        if checker is not None:
            checker.cell = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"cell-{index}"
        lease = _JOB.get("lease")
        if cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, index)
        start = time.monotonic()
        try:
            if lease is None:
                return super().preprocess_cell(cell, resources, index)
            # A cell runs under the device's shared lease: a timed check of another student waits for it
            # to end, and it waits (before it starts) for such a check to end (gpudl_instructor.gpulease).
            with lease.shared(SHARED_WAIT_S):
                _note_waited(lease)
                return super().preprocess_cell(cell, resources, index)
        finally:
            name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"cell-{index}"
            _JOB.setdefault("cell_seconds", {})[name] = time.monotonic() - start

    def output(self, outs, msg, display_id, cell_index):
        out = super().output(outs, msg, display_id, cell_index)
        if out is None:
            return None
        limits: OutputLimits = _JOB["outputs"]
        size = _size(out)
        used = self._gpudl_cell_bytes.get(cell_index, 0)
        if used + size > limits.cell_bytes or self._gpudl_total + size > limits.notebook_bytes:
            if out in outs:
                outs.remove(out)
            if cell_index not in self._gpudl_cut:
                self._gpudl_cut.add(cell_index)
                note = NotebookNode(output_type="stream", name="stdout",
                                    text=f"\n[output truncated by the grader: a cell may print {limits.cell_bytes // 1024} KiB "
                                         f"and a notebook {limits.notebook_bytes // 1024 // 1024} MiB]\n")
                outs.append(note)
            return None
        self._gpudl_cell_bytes[cell_index] = used + size
        self._gpudl_total += size
        return out


def _note_waited(lease: Any) -> None:
    """Tell the grader how long this student has waited for the lease (it extends their time limit)."""
    path = Path(_JOB["workdir"]) / LEASE_WAITED
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{lease.waited:.3f}")
    tmp.replace(path)


def _note_out_of_memory(nb: NotebookNode, fraction: float) -> None:
    """An out-of-memory error of the GPU gets a line naming the student's share of the device."""
    from .gpulease import OOM_NOTE

    gib = fraction * _JOB.get("gpu_gib", 0.0)
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") != "error":
                continue
            if out.get("ename") == "OutOfMemoryError" or "CUDA out of memory" in (out.get("evalue") or ""):
                bound = f"{gib:.1f} GiB of it ({fraction:.0%})" if gib else f"{fraction:.0%} of it"
                note = OOM_NOTE.format(bound=bound)
                out["evalue"] = f"{out.get('evalue', '')}\n{note}"
                out["traceback"] = [*out.get("traceback", []), note]


def _apply_verdicts(nb: NotebookNode, checker: CheckerServer | None, expected: dict[str, set]) -> None:
    """A test cell the checker failed gets an error output (nbgrader scores it 0); the
    checker's verdicts are also kept for the grader's report."""
    if checker is None:
        return
    verdicts = checker.verdicts(expected)
    _JOB["verdicts"] = {k: asdict(v) for k, v in verdicts.items()}
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        v: Verdict | None = verdicts.get(gid)
        if cell.cell_type != "code" or v is None or v.passed is not False:
            continue
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            continue
        cell.outputs.append(NotebookNode(output_type="error", ename="GradingError",
                                         evalue=f"(checked by the grader) {v.message}",
                                         traceback=[f"GradingError: (checked by the grader) {v.message}"]))


class QuietTests(Preprocessor):
    """In graded test cells, stderr becomes stdout: what a library, a thread or a file
    descriptor writes there must not cost a passing cell its points."""

    enabled = Bool(True)

    def preprocess_cell(self, cell, resources, index):
        if os.environ.get(KEEP_STDERR) == "1":    # the project's tests look for stderr in a lab's own test cells
            return cell, resources
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and nbg.get("grade") and not nbg.get("solution"):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and out.get("name") == "stderr":
                    out["name"] = "stdout"
        return cell, resources


# --- one student ------------------------------------------------------------------------------

def _config(job: Job, course: Path):
    from traitlets.config import Config
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, LimitOutput, SaveAutoGrades)

    from .nbgrader_setup import configure_nbgrader

    c = Config()
    configure_nbgrader(c, cell_timeout=job.cell_timeout)
    c.CourseDirectory.root = str(course)
    c.CourseDirectory.assignment_id = job.lab
    c.CourseDirectory.student_id = job.student
    c.Autograde.autograde_preprocessors = [GradedExecute, QuietTests, ClearMetadataPreprocessor, LimitOutput,
                                          SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
    c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:"]
    if job.gpu and job.gpu_fraction:        # the kernel's share of a GPU that students share
        from .gpulease import memory_fraction_line
        c.Execute.extra_arguments.append(f"--IPKernelApp.exec_lines={memory_fraction_line(job.gpu_fraction)}")
    return c


def autograde_one(job: Job) -> dict[str, Any]:
    """Autograde one student (in this process); returns a plain-data report:
    ``{"status": "graded"|"error", "reason", "seconds", "verdicts", "checker_errors", "checker_out_of_memory"}``."""
    import logging
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory

    start = time.monotonic()
    work = Path(job.workdir)
    course = work / "course"
    if course.exists():
        shutil.rmtree(course)
    (course / "source" / job.lab).mkdir(parents=True)
    shutil.copy(job.base_gradebook, course / "gradebook.db")
    sub = course / "submitted" / job.student / job.lab
    sub.mkdir(parents=True)
    shutil.copy(job.notebook, sub / f"{job.lab}.ipynb")
    # Unix sockets (the checker's and the kernel's) must have short paths (108 bytes at most).
    sockets = Path(tempfile.mkdtemp(prefix="gpudl-"))
    kernel_dir = sockets / "k"
    sock = sockets / "checker.sock"
    # Tensors come back to the checker on the device they were on in the kernel, as in a local check.
    lease = None
    if job.lease:
        from .gpulease import GpuLease
        lease = GpuLease(job.lease, timeout=min(60.0, job.cell_timeout / 3))
    checker = CheckerServer(sock, job.seed, call_timeout=job.cell_timeout + 30, lease=lease)
    sandbox = None
    if job.sandbox:
        sandbox = Sandbox(home=None, kernel_dir=kernel_dir, limits=Limits(**job.limits), checker_socket=sock,
                          gpu=job.gpu, uid=job.uid,
                          env={"NBGRADER_EXECUTION": "autograde", "GPUDL_DEVICE": job.device})
        sandbox.prepare()
    else:
        kernel_dir.mkdir(parents=True)
    for name in _SECRET_NAMES:
        os.environ.pop(name, None)
    _JOB.clear()
    _JOB.update(kernel_dir=str(kernel_dir), workdir=str(work), sandbox=sandbox, checker=checker,
                kernel_env={"GPUDL_CHECKER": str(sock), "GPUDL_DEVICE": job.device},
                expected={k: {(n, bool(h)) for n, h in v} for k, v in job.expected.items()},
                outputs=OutputLimits(**job.outputs), lease=lease,
                gpu_fraction=job.gpu_fraction if job.gpu else 0.0, gpu_gib=job.gpu_gib)
    report: dict[str, Any] = {"status": "graded", "reason": "", "verdicts": {}, "checker_errors": []}
    logging.getLogger("traitlets").setLevel(logging.ERROR)
    log = io.StringIO()
    # Where the seconds went, each a duration: spawn (the process, set by child_main), setup (the
    # scratch course, the sandbox), autograde (nbgrader: kernel_start and cells within it), feedback;
    # lease_wait and the timed checks' counts.
    marks = {"setup": time.monotonic() - start}
    phase = time.monotonic()
    try:
        with checker:
            config = _config(job, course)
            converter = Autograde(coursedir=CourseDirectory(config=config), config=config)
            converter.log.setLevel(logging.ERROR)
            converter.log.handlers[:] = [logging.StreamHandler(log)]
            converter.log.propagate = False
            converter.start()
    except Exception as exc:  # noqa: BLE001 - reported per student (NbGraderException among them)
        report.update(status="error", reason=_nbgrader_reason(exc, log.getvalue(), OutputLimits(**job.outputs)))
    finally:
        if sandbox is not None:
            sandbox.kill()
        shutil.rmtree(sockets, ignore_errors=True)
        if lease is not None:
            marks["lease_wait"] = lease.waited
            marks["timed_alone"] = sum(granted for _, granted in checker.leases)     # timed checks with the device alone
            marks["timed_shared"] = sum(not granted for _, granted in checker.leases)
            lease.close()
    marks["autograde"] = time.monotonic() - phase
    phase = time.monotonic()
    if job.feedback and report["status"] == "graded":
        from . import feedback
        try:
            feedback.generate(course, job.lab, job.student, course_root=job.course_root)
        except Exception as exc:  # noqa: BLE001 - grades stand without a feedback page
            report["feedback_error"] = f"{type(exc).__name__}: {exc}"
    marks["feedback"] = time.monotonic() - phase
    marks.update(_JOB.get("marks", {}))
    cells = _JOB.get("cell_seconds", {})
    marks["cells"] = sum(cells.values())
    report["marks"] = {k: round(v, 2) for k, v in marks.items()}
    report["slowest_cells"] = {k: round(v, 2) for k, v in sorted(cells.items(), key=lambda kv: -kv[1])[:SLOWEST_CELLS]}
    report["verdicts"] = _JOB.get("verdicts", {})
    report["checker_errors"] = list(checker.errors)
    report["checker_out_of_memory"] = list(checker.out_of_memory)
    report["seconds"] = time.monotonic() - start
    return report


def _nbgrader_reason(exc: BaseException, log: str = "", limits: OutputLimits = OutputLimits()) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)) + traceback.format_exc() + log
    if "DeadKernelError" in text or "Kernel died" in text or "kernel died" in text:
        return "the kernel died while running the notebook (out of memory, a crash, or os._exit?)"
    if "Timeout waiting for IOPub output" in text:
        return ("the kernel's output stopped arriving in a cell: one output over "
                f"{limits.message_bytes >> 20} MiB (the grader refuses it) or a flood of output")
    if "RuntimeError: Kernel didn't respond" in text or "Kernel didn't respond" in text:
        return "the kernel did not start or stopped answering"
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    detail = lines[-1][:300] if lines else (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
    return f"nbgrader could not grade it: {detail}"


def import_labs(package) -> list[str]:
    """Import ``package``'s ``lab*`` modules with CUDA's start refused (a CUDA started before the
    fork is lost to every student's process): a module that would start it at import (a spec read
    from the device) stays unimported here, and each student's process imports it instead.
    Returns the modules imported."""
    import torch

    lazy_init = torch.cuda._lazy_init

    def refuse() -> None:
        raise RuntimeError("CUDA is not started in the server students' processes fork from")

    done = []
    torch.cuda._lazy_init = refuse
    try:
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("lab"):
                try:
                    importlib.import_module(f"{package.__name__}.{info.name}")
                    done.append(info.name)
                except Exception:  # noqa: BLE001 - a lab that cannot import here is imported when graded
                    pass
    finally:
        torch.cuda._lazy_init = lazy_init
    return done


def child_main(job_dict: dict[str, Any], result_path: str, env: dict[str, str] | None = None,
               started: float | None = None) -> None:
    """Entry point of the per-student process: grade, write the report as JSON. ``started``: when the
    grader asked for this process (``time.time()``), for the ``spawn`` mark."""
    import warnings
    spawn = time.time() - started if started is not None else 0.0
    warnings.simplefilter("ignore")            # nbgrader's SQLAlchemy and traitlets chatter
    os.environ.update(env or {})
    if (env or {}).get("OMP_NUM_THREADS"):       # the checker's share of the cores (pipeline.thread_env)
        import torch
        torch.set_num_threads(int(env["OMP_NUM_THREADS"]))
    try:
        report = autograde_one(Job(**job_dict))
        report["marks"]["spawn"] = round(spawn, 2)
    except BaseException as exc:  # noqa: BLE001 - the parent reads the reason
        report = {"status": "error", "reason": f"grading failed: {type(exc).__name__}: {exc}"}
    tmp = Path(result_path).with_suffix(".tmp")
    tmp.write_text(json.dumps(report))
    tmp.replace(result_path)


__all__ = ["Job", "autograde_one", "child_main", "import_labs", "GradedExecute", "QuietTests", "OutputLimits",
           "SandboxKernelManager"]
