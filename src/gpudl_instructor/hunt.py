"""The proof that the course edition holds no answer: ``gpudl hunt`` (and ``gpudl handout``).

Two hunts, per lab:

- **Callables.** The solution notebook runs as a student's copy would (its test cells left out),
  so every exercise's test cell can be called as the grader calls it. Then, for each hidden call
  ``check.NAME(fn, ..., hidden=True)``, every function and callable attribute reachable from the
  course edition (each module of ``gpudl``, its classes' static and class methods, the methods of
  its module-level objects, Triton and numba kernels) whose signature fits the student's
  function is put in the student's place and the hidden check runs on it, as the checker would.
  A candidate that passes is an answer the hand-out would give away: the finding names it and
  where it lives. (A check that forbids a library routine through its guard refuses a course
  tool built on that routine, so such a tool does not score.)
- **Text.** The distinctive lines of each solution cell (long enough to be the student's own
  work, and not in the released starter code) are looked for in the course edition's sources and
  lecture notebooks; a cell with several of its lines in one file is a pasted answer.

A lab whose hunt finds nothing holds no graded answer in the course edition. Each lab hunts in a
process of its own (``python -m gpudl_instructor.hunt LAB``), so a candidate that changes global
state cannot disturb the next lab. Most candidates fail at their first call, and a check can say
so once for all of them: a **screen** records the solution's first calls, calls each candidate
on them here, and lets go one that raises where a probe raising the same exception fails the
check (``_Screen``); only the others run the whole check. Results are cached (in
``$GPUDL_HUNT_CACHE``, else ``.gpudl-hunt/``) keyed by the hash of everything they depend on (the
course edition, the instructor's checks and references, the lab's notebooks), so a second
``gpudl handout`` of the same sources answers at once; a lab another process is hunting is
waited for, then read from the cache. Labs hunt side by side, one per CPU.

Public names: ``Finding``, ``hunt``, ``hunt_lab``, ``report``, ``text_hunt``, ``PENDING``.
"""
from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import importlib
import inspect
import io
import json
import os
import pickle
import pkgutil
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

ATTEMPT_SECONDS = 20.0          # one candidate on one hidden check
MEMORY_BYTES = 6 << 30          # of the process that hunts in one lab (as a graded kernel's limit)
RESTARTS = 5                    # runs of a lab's hunt after one that a candidate killed
# Labs whose answers still sit in the course edition while their split is under way: the hunt
# reports them and `gpudl handout` says so, without refusing. Empty once every lab is split.
PENDING: dict[str, str] = {}


@dataclass(frozen=True)
class Finding:
    """An answer found in the course edition."""

    lab: str
    exercise: str          # the test cell (grade id) whose hidden check it passes, or the solution cell
    kind: str              # "callable": it scores; "text": the solution's lines are there
    where: str             # the callable's qualified name, or the file
    detail: str = ""

    def line(self) -> str:
        if self.kind == "callable":
            return f"{self.lab} {self.exercise}: {self.where} passes the hidden check{f' ({self.detail})' if self.detail else ''}"
        return f"{self.lab} {self.exercise}: the solution's lines are in {self.where}: {self.detail}"


# --- what is reachable ------------------------------------------------------------------------

_SKIP_MODULES = ("gpudl.__main__", "gpudl.cli")


def course_modules() -> list[types.ModuleType]:
    """Every module of the course edition, imported."""
    import gpudl

    mods = [gpudl]
    for info in pkgutil.walk_packages(gpudl.__path__, "gpudl."):
        if info.name in _SKIP_MODULES:
            continue
        try:
            mods.append(importlib.import_module(info.name))
        except Exception:  # noqa: BLE001 - a module that cannot import here offers nothing to call
            continue
    return mods


def _is_course_object(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "")
    return isinstance(module, str) and (module == "gpudl" or module.startswith("gpudl."))


def candidates() -> dict[str, Any]:
    """{qualified name: callable} of everything callable the course edition offers."""
    found: dict[str, Any] = {}
    seen: set[int] = set()

    def add(name: str, obj: Any) -> None:
        if id(obj) in seen or not callable(obj):
            return
        seen.add(id(obj))
        found[name] = obj

    for mod in course_modules():
        for attr, obj in list(vars(mod).items()):
            if attr.startswith("__"):
                continue
            name = f"{mod.__name__}.{attr}"
            if isinstance(obj, type):
                if not _is_course_object(obj):
                    continue
                for mname, raw in vars(obj).items():
                    if isinstance(raw, (staticmethod, classmethod)):
                        add(f"{name}.{mname}", getattr(obj, mname))
                continue
            if isinstance(obj, types.ModuleType):
                continue
            if callable(obj) and (_is_course_object(obj) or _kernel_function(obj) is not None):
                add(name, obj)
            elif _is_course_object(obj) and not callable(obj):      # a module-level object: its methods
                for mname in dir(obj):
                    if mname.startswith("_"):
                        continue
                    try:
                        bound = getattr(obj, mname)
                    except Exception:  # noqa: BLE001 - a property that fails is no candidate
                        continue
                    if callable(bound) and not isinstance(bound, type):
                        add(f"{name}.{mname}", bound)
            elif isinstance(obj, dict):
                for key, value in obj.items():
                    if callable(value) and _is_course_object(value):
                        add(f"{name}[{key!r}]", value)
    return found


def _kernel_function(obj: Any) -> Any:
    """The Python function under a Triton JITFunction or a numba-cuda kernel, else None."""
    for attr in ("fn", "py_func"):
        inner = getattr(obj, attr, None)
        if isinstance(inner, types.FunctionType) and type(obj).__module__.split(".")[0] in ("triton", "numba"):
            return inner
    return None


def _arity(obj: Any) -> tuple[int, int] | None:
    """(required positional parameters, all positional parameters; -1 for *args) of a callable."""
    target = _kernel_function(obj) or obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    required = total = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            total += 1
            required += p.default is p.empty
        elif p.kind is p.VAR_POSITIONAL:
            total = -1
        elif p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            return None                     # needs a keyword the check will not pass
    return required, total


def fits(candidate: Any, student: Any) -> bool:
    """Whether ``candidate`` accepts the calls the check makes of ``student``: the same kind
    (a kernel for a kernel) and every positional count the student's function accepts."""
    if (_kernel_function(candidate) is None) != (_kernel_function(student) is None):
        return False
    want, have = _arity(student), _arity(candidate)
    if want is None or have is None:
        return False
    lo, hi = want
    counts = range(lo, (hi if hi >= 0 else lo) + 1)
    return all(have[0] <= n and (have[1] < 0 or n <= have[1]) for n in counts)


# --- running a lab -----------------------------------------------------------------------------

_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", re.S)


def hidden_calls(source: str) -> list[ast.Call]:
    """The calls ``X.NAME(..., hidden=True)`` in the hidden regions of a test cell."""
    calls = []
    for region in _HIDDEN.findall(source):
        try:
            tree = ast.parse(region)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and any(k.arg == "hidden" and isinstance(k.value, ast.Constant)
                                                  and k.value.value is True for k in node.keywords):
                calls.append(node)
    return calls


def _students(value: Any) -> bool:
    """Whether a namespace value is a function the notebook itself defined (the student's)."""
    fn = _kernel_function(value) or value
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename.startswith("<gpudl-run")


class _Timeout(BaseException):
    pass


@contextlib.contextmanager
def _limit(seconds: float) -> Iterator[None]:
    def on_alarm(signum, frame):
        raise _Timeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _passes(check: Callable, args: list, kwargs: dict) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    _limit(ATTEMPT_SECONDS):
                check(*args, **kwargs)
        except (Exception, _Timeout, SystemExit, KeyboardInterrupt):
            return False
    return True


# --- the screen: a candidate's first calls, made here --------------------------------------------
#
# A check calls the student's function; where that happens costs the same for every candidate (lab
# 10's checks start a process group per run). So first, once per check, the solution runs the check
# as a ``_Stand``, which writes down the arguments of its first call in each process that calls it
# (the hunt's own, or a launched worker). Then each candidate is called here on those arguments,
# quietly. One that raises an exception of one type E at every recorded call fails the check as a
# function that raises E at its first call in every process fails it, and whether that fails is
# asked of the check itself, once per type, with a probe: the ``_Stand`` that raises E there and is
# the solution after. Likewise one that returns at every recorded call and leaves its arguments as
# they were fails as the probe that does so does: it returns what the solution returns, computed on
# a copy of the arguments, and is the solution after (a check of work done in place, such as lab 10's
# collectives, fails it; a check of a returned value passes it, and those candidates run whole). A
# candidate whose first call takes over ``SLOWER`` times the solution's (and over ``DRY_SECONDS``)
# is too slow to be an answer the hand-out gives away (the whole check's limit, ``ATTEMPT_SECONDS``,
# says the same of a slower one). Every other candidate runs the whole check: one that changed its
# arguments, one whose probe passed, and one that touched torch.distributed in a call recorded in a
# worker (its process group is not here). A guard only ever refuses more, so a call made here
# without one cannot fail where the check's would pass.

DRY_SECONDS = 2.0               # the least time a first call here may take before it is too slow
SLOWER = 20                     # ... or this many times the solution's first call, if longer


class _Stand:
    """The solution in the student's place: in each process, its first call's arguments are written
    to ``folder`` (when given), or ``first`` is raised at it (when given), or (``_UNCHANGED``) its
    arguments are left as they were and it returns what the solution returns on a copy of them.
    Picklable, so a launched worker gets one too."""

    def __init__(self, fn: Callable, folder: str | None = None, first: BaseException | str | None = None):
        self.fn, self.folder, self.first = fn, folder, first
        self.__name__ = getattr(fn, "__name__", "answer")
        self.called_in: set[int] = set()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "called_in": set()}          # each process makes its own first call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if os.getpid() not in self.called_in:
            self.called_in.add(os.getpid())
            if self.folder is not None:
                from gpudl.collectives.worker import pickler, write_atomic
                try:
                    data = pickler().dumps((args, kwargs))
                except Exception:  # noqa: BLE001 - a call that cannot be written down screens nothing
                    data = b""
                write_atomic(os.path.join(self.folder, f"{os.getpid()}.pkl"), data)
            if self.first is _UNCHANGED:
                try:
                    args, kwargs = copy.deepcopy((args, kwargs))
                except Exception:  # noqa: BLE001 - arguments that cannot be copied: the solution, so no screen
                    pass
            elif self.first is not None:
                raise self.first
        return self.fn(*args, **kwargs)


class _Distributed(Exception):
    pass


def _touches_distributed(frame: Any, event: str, arg: Any) -> None:
    if event == "call" and f"{os.sep}torch{os.sep}distributed{os.sep}" in frame.f_code.co_filename:
        raise _Distributed()
    if event == "c_call" and str(getattr(arg, "__module__", "") or "").startswith("torch._C._distributed"):
        raise _Distributed()


_TOO_SLOW = "too slow"
_UNCHANGED = "returned and left its arguments as they were"


def _first_calls(fn: Any, calls: list[tuple[bytes, bool]], limit: float) -> BaseException | str | None:
    """``fn`` called here on each recorded first call ((its pickle, whether a worker made it)): the
    exception of one type it raised at every one, ``_TOO_SLOW``, ``_UNCHANGED`` (it returned at every
    one and left the arguments as they were), or None (anything else: it raised several types, or
    raised at some and returned at others, or changed its arguments, or touched torch.distributed
    where a worker's call was recorded)."""
    raised: BaseException | None = None
    returned = False
    for data, in_worker in calls:
        args, kwargs = pickle.loads(data)
        try:
            before = pickle.dumps((args, kwargs))
        except Exception:  # noqa: BLE001 - arguments that cannot be compared screen nothing
            return None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                        _limit(limit):
                    if in_worker:
                        sys.setprofile(_touches_distributed)
                    try:
                        fn(*args, **kwargs)
                    finally:
                        sys.setprofile(None)
            except _Timeout:
                return _TOO_SLOW
            except (_Distributed, SystemExit, KeyboardInterrupt):
                return None
            except Exception as exc:  # noqa: BLE001 - what it raised is the point
                if returned or (raised is not None and type(exc) is not type(raised)):
                    return None
                raised = exc
                continue
        try:
            unchanged = pickle.dumps((args, kwargs)) == before
        except Exception:  # noqa: BLE001
            unchanged = False
        if raised is not None or not unchanged:
            return None
        returned = True
    if returned:
        return _UNCHANGED
    try:
        return pickle.loads(pickle.dumps(raised))        # the probe raises it, in a worker too
    except Exception:  # noqa: BLE001
        return None


class _Screen:
    """One check's screen for the student's function at argument ``index`` (see above)."""

    def __init__(self, check: Callable, args: list, kwargs: dict, index: int, scratch: Path):
        self.check, self.args, self.kwargs, self.index = check, args, kwargs, index
        self.verdicts: dict[Any, bool] = {}              # exception type, or _UNCHANGED -> its probe fails the check
        self.calls: list[tuple[bytes, bool]] = []
        self.limit = DRY_SECONDS
        if _kernel_function(args[index]) is not None:
            return                                       # a kernel is launched, not called: no screen
        folder = Path(tempfile.mkdtemp(prefix="first-calls-", dir=scratch))
        if not _passes(check, self.trial(_Stand(args[index], str(folder))), kwargs):
            return                                       # (a solution that fails its check screens nothing)
        calls = [(p.read_bytes(), p.stem != str(os.getpid())) for p in sorted(folder.glob("*.pkl"))]
        if not calls or not all(data for data, _ in calls):
            return
        began = time.monotonic()
        _first_calls(args[index], calls, ATTEMPT_SECONDS)
        self.limit = max(DRY_SECONDS, SLOWER * (time.monotonic() - began))
        self.calls = calls

    def trial(self, fn: Any) -> list:
        return [fn if j == self.index else a for j, a in enumerate(self.args)]

    def fails(self, candidate: Any) -> bool:
        """Whether ``candidate`` surely fails the check (or is too slow), from its first calls alone."""
        if not self.calls or _kernel_function(candidate) is not None:
            return False
        exc = _first_calls(candidate, self.calls, self.limit)
        if exc is _TOO_SLOW:
            return True
        if exc is None:
            return False
        kind = exc if exc is _UNCHANGED else type(exc)
        if kind not in self.verdicts:
            probe = _Stand(self.args[self.index], None, exc)
            self.verdicts[kind] = not _passes(self.check, self.trial(probe), self.kwargs)
        return self.verdicts[kind]


def hunt_callables(lab: str, root: Path, pool: dict[str, Any] | None = None,
                   journal: Path | None = None, screen: bool = True) -> list[Finding]:
    """Every course callable (or every one of ``pool``) that passes a hidden check of ``lab`` in the
    student's place. With a ``journal``, each attempt is written down before it runs and when it
    ends, and attempts the journal already holds are not made again: a candidate that kills the
    process (a crash in a simulator, an abort under the memory limit) is skipped on the rerun
    (it would have killed a student's kernel too, which scores nothing). ``screen``: candidates
    that fail at their first call are let go without the whole check (see ``_Screen``)."""
    done: set[str] = set()
    found_before: list[Finding] = []
    if journal is not None and journal.exists():
        for line in journal.read_text().splitlines():
            kind, _, rest = line.partition(" ")
            if kind in ("TRY", "DONE"):
                done.add(rest)
            elif kind == "FOUND":
                found_before.append(Finding(**json.loads(rest)))
    log = journal.open("a") if journal is not None else None

    def note(kind: str, text: str) -> None:
        if log is not None:
            log.write(f"{kind} {text}\n")
            log.flush()
    import nbformat

    from . import checks
    from .inprocess import execute

    checks.install()
    nb = nbformat.read(root / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    tests = [c for c in nb.cells if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    runnable = nbformat.from_dict(nb)
    runnable.cells = [c for c in nb.cells if c not in tests]
    namespace = execute(runnable)
    pool = candidates() if pool is None else pool
    with tempfile.TemporaryDirectory(prefix="gpudl-hunt-", ignore_cleanup_errors=True) as scratch, \
            contextlib.chdir(scratch):
        findings = _hunt_tests(lab, tests, namespace, pool, done, note, Path(scratch), screen)
    if log is not None:
        log.close()
    return found_before + findings


def _hunt_tests(lab: str, tests: list, namespace: dict, pool: dict[str, Any], done: set[str],
                note: Callable[[str, str], None], scratch: Path, screen: bool) -> list[Finding]:
    """The candidates of ``pool`` on the hidden calls of the test cells ``tests``, in ``scratch`` (a
    candidate called with a check's arguments may write files where it runs)."""
    findings: list[Finding] = []
    for cell in tests:
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        for call in hidden_calls(cell.source):
            try:
                check = eval(compile(ast.Expression(call.func), "<hunt>", "eval"), namespace)
                args = [eval(compile(ast.Expression(a), "<hunt>", "eval"), namespace) for a in call.args]
                kwargs = {k.arg: eval(compile(ast.Expression(k.value), "<hunt>", "eval"), namespace)
                          for k in call.keywords if k.arg}
            except Exception:  # noqa: BLE001 - a call the notebook cannot evaluate has no student argument
                continue
            for i, value in enumerate(args):
                if not _students(value):
                    continue
                fitting = [(name, c) for name, c in pool.items()
                           if fits(c, value) and f"{grade_id}:{i}:{name}" not in done]
                sieve = _Screen(check, args, kwargs, i, scratch) if screen and fitting else None
                for name, candidate in fitting:
                    attempt = f"{grade_id}:{i}:{name}"
                    note("TRY", attempt)
                    trial = [candidate if j == i else a for j, a in enumerate(args)]
                    if not (sieve is not None and sieve.fails(candidate)) and _passes(check, trial, kwargs):
                        finding = Finding(lab, grade_id, "callable", name,
                                          f"in place of {getattr(value, '__name__', 'the answer')}")
                        findings.append(finding)
                        note("FOUND", json.dumps(asdict(finding)))
                    note("DONE", attempt)
    return findings


# --- text -------------------------------------------------------------------------------------

_SOLUTION = re.compile(r"### BEGIN SOLUTION(.*?)### END SOLUTION", re.S)
MIN_LINE = 28                 # shorter lines are idioms every solution shares
MIN_SHARED = 2                # lines of one cell found in one file that make it a paste


def _normal(line: str) -> str:
    line = line.split("#", 1)[0] if "#" in line and not re.search(r"['\"].*#.*['\"]", line) else line
    return re.sub(r"\s+", " ", line).strip()


def _course_texts(root: Path) -> dict[str, set[str]]:
    """{file: its normalized lines} for the course edition's sources and lecture notebooks."""
    import nbformat

    texts: dict[str, set[str]] = {}
    for path in sorted((root / "src" / "gpudl").rglob("*.py")):
        texts[str(path.relative_to(root))] = {_normal(ln) for ln in path.read_text(encoding="utf-8").splitlines()}
    for path in sorted((root / "course").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        lines = {_normal(ln) for c in nb.cells if c.cell_type == "code" for ln in c.source.splitlines()}
        texts[str(path.relative_to(root))] = lines
    return texts


def text_hunt(lab: str, root: Path) -> list[Finding]:
    """Solution cells of ``lab`` whose distinctive lines appear in one course-edition file."""
    import nbformat

    solution = nbformat.read(root / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    release = nbformat.read(root / "labs" / lab / f"{lab}.ipynb", as_version=4)
    starter = {_normal(ln) for c in release.cells for ln in c.source.splitlines()}
    texts = _course_texts(root)
    findings = []
    for cell in solution.cells:
        if cell.cell_type != "code":
            continue
        body = "\n".join(_SOLUTION.findall(cell.source))
        lines = {_normal(ln) for ln in body.splitlines()}
        lines = {ln for ln in lines if len(ln) >= MIN_LINE and ln not in starter}
        if not lines:
            continue
        need = min(MIN_SHARED, len(lines))
        for path, have in texts.items():
            shared = sorted(lines & have)
            if len(shared) >= need:
                gid = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
                findings.append(Finding(lab, gid, "text", path,
                                        f"{len(shared)} of its {len(lines)} lines, e.g. {shared[0][:80]!r}"))
    return findings


# --- the whole hunt ----------------------------------------------------------------------------

def hunt_lab(lab: str, root: Path, journal: Path | None = None) -> list[Finding]:
    """Both hunts on one lab, in this process."""
    return text_hunt(lab, root) + hunt_callables(lab, root, journal=journal)


def _digest(lab: str, root: Path) -> str:
    """The hash of everything a lab's hunt reads (by paths relative to their folders, so another
    clone of the same sources has the same key)."""
    import gpudl

    h = hashlib.sha256(lab.encode())
    course = root / "src" / "gpudl"
    folders = [course if course.is_dir() else Path(gpudl.__file__).parent, Path(__file__).parent]
    files = [(f, p) for f in folders for p in sorted(f.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    files += [(root, p) for p in sorted((root / "solutions" / lab).glob("*.ipynb"))
              + sorted((root / "labs" / lab).glob("*.ipynb")) + sorted((root / "course").glob("*.ipynb"))]
    for folder, p in files:
        h.update(f"{folder.name}/{p.relative_to(folder)}".encode())
        h.update(p.read_bytes())
    return h.hexdigest()


CACHE_ENV = "GPUDL_HUNT_CACHE"


def cache_dir(root: Path) -> Path:
    """Where hunts are kept: ``$GPUDL_HUNT_CACHE`` (``make test`` sets the virtualenv's folder),
    else ``.gpudl-hunt/`` in the course."""
    return Path(os.environ.get(CACHE_ENV) or root / ".gpudl-hunt")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold ``path`` locked: another process hunting the same lab waits, then finds it cached."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _hunt_in_process(lab: str, root: Path) -> list[Finding]:
    """One lab's hunt in processes of its own (a fresh one after each that a candidate killed)."""
    # The course edition of ``root`` (its src/ first on the path), not whichever gpudl is installed.
    path = os.pathsep.join(p for p in (str(root / "src"), os.environ.get("PYTHONPATH", "")) if p)
    # In a scratch folder: a candidate called with the check's arguments may write files. A
    # candidate that kills the process is skipped on the next run, which goes on from the journal.
    with tempfile.TemporaryDirectory(prefix="gpudl-hunt-") as scratch:
        journal = Path(scratch) / "journal.txt"
        for _ in range(RESTARTS + 1):
            res = subprocess.run([sys.executable, "-m", __name__, lab, "--root", str(root), "--journal",
                                  str(journal)], capture_output=True, text=True, cwd=scratch,
                                 env={**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": path})
            if res.returncode in (0, 1):
                break
    if res.returncode not in (0, 1):
        raise RuntimeError(f"the hunt in {lab} failed (exit status {res.returncode}):\n"
                           f"{res.stdout[-1500:]}{res.stderr[-3000:]}")
    return [Finding(**f) for f in json.loads(res.stdout.strip().splitlines()[-1])]


def _kept(store: Path) -> dict:
    """What the cache holds for one lab ({} when nothing readable)."""
    try:
        return json.loads(store.read_text()) if store.is_file() else {}
    except ValueError:
        return {}


def hunt(labs: Sequence[str] | None = None, root: Path | None = None, *, cache: bool = True,
         jobs: int | None = None, progress: Callable[[str], None] | None = None) -> list[Finding]:
    """The hunt over ``labs`` (default: every lab), each in a fresh process, cached by content.

    Up to ``jobs`` labs (default: one per CPU) hunt at once, the longest first: by the time the
    cache kept from their last hunt, else the later labs first (their checks are heavier; lab 10's
    start processes for every candidate). ``progress`` gets a line as each lab ends."""
    import concurrent.futures as cf

    from gpudl.collectives.worker import write_atomic

    from .course import lab_named, lab_names, repo_root

    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    root = repo_root(root)
    names = lab_names(root)
    labs = [lab_named(lab, names) for lab in labs] if labs else names
    store_dir = cache_dir(root)
    found: dict[str, list[Finding]] = {}
    todo: list[tuple[str, str, Path]] = []
    took: dict[str, float] = {}         # seconds of the last hunt, kept even when the sources changed since

    for lab in labs:
        key = _digest(lab, root)
        store = store_dir / f"{lab}.json"
        last = _kept(store)
        if cache and last.get("key") == key:
            found[lab] = [Finding(**f) for f in last["findings"]]
            continue
        took[lab] = float(last.get("seconds", float("inf")))
        todo.append((lab, key, store))
    todo.sort(key=lambda t: (-took[t[0]], -names.index(t[0])))

    failed = threading.Event()

    def one(lab: str, key: str, store: Path, started: threading.Event) -> list[Finding]:
        if failed.is_set():                              # an earlier lab failed: this one never starts
            started.set()
            return []
        with _locked(store.with_suffix(".lock")) if cache else contextlib.nullcontext():
            started.set()
            last = _kept(store)
            if cache and last.get("key") == key:        # another process hunted it while this one waited
                return [Finding(**f) for f in last["findings"]]
            began = time.monotonic()
            try:
                result = _hunt_in_process(lab, root)
            except BaseException:
                failed.set()
                raise
            seconds = time.monotonic() - began
            if cache:
                write_atomic(str(store), json.dumps({"key": key, "seconds": round(seconds, 1),
                                                     "findings": [asdict(f) for f in result]}).encode())
        if progress is not None:
            progress(f"hunt: {lab}: {report(result) if result else 'no answer'} ({seconds:.0f} s)")
        return result

    if todo:
        workers = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
        if progress is not None:
            progress(f"hunt: {len(todo)} lab(s) to hunt in, {workers} at a time"
                     + (f" ({len(labs) - len(todo)} unchanged since their last hunt)" if len(todo) < len(labs) else ""))
        pool = cf.ThreadPoolExecutor(workers)
        try:
            futures: dict[cf.Future, str] = {}
            for t in todo:                  # each starts once the one before it has: the longest first
                started = threading.Event()
                futures[pool.submit(one, *t, started)] = t[0]
                while not started.wait(0.05):
                    for future in futures:
                        if future.done() and future.exception() is not None:
                            raise future.exception()      # a lab failed: no later lab starts
            for future in cf.as_completed(futures):
                found[futures[future]] = future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return [f for lab in labs for f in found[lab]]


def report(findings: Sequence[Finding]) -> str:
    if not findings:
        return "no answer found in the course edition"
    return f"{len(findings)} answer(s) found in the course edition:\n  " + "\n  ".join(f.line() for f in findings)


def _main(argv: list[str]) -> int:
    import argparse

    from gpudl.collectives.worker import die_with_parent

    die_with_parent()           # a hand-out stopped (a timeout, Ctrl-C) leaves no hunt behind
    if os.getppid() == 1:       # it had stopped already
        return 2
    p = argparse.ArgumentParser(prog=f"python -m {__name__}")
    p.add_argument("lab")
    p.add_argument("--root", required=True)
    p.add_argument("--journal", help="the attempts so far (made again by nobody), and where to write more")
    args = p.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "Agg")
    root = Path(args.root).resolve()
    os.chdir(tempfile.mkdtemp(prefix="gpudl-hunt-"))     # a candidate may write files where it runs
    import resource
    limit = MEMORY_BYTES       # a candidate called with a hidden case's sizes may ask for tens of GB: it fails
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    import gpudl  # noqa: F401 - the device (Triton's interpreter, the simulator) before any lab code
    found = hunt_lab(args.lab, root, Path(args.journal) if args.journal else None)
    sys.stdout.flush()
    print(json.dumps([asdict(f) for f in found]))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
