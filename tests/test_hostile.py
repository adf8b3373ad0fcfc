"""The adversarial bank: hostile and broken submissions of lab01, graded in one batch beside
correct students, each with the safe outcome asserted.

Every case is a student folder built from a correct submission (or from ``wrong``, the same
with two wrong answers worth 6 points): a cell added, a solution replaced, or the folder itself
replaced. The batch runs with small limits (2 GiB of memory, 20 s per cell, 90 s per student).
After it, for the whole batch: every submission has exactly one row; correct students keep
full marks; no cheat scores above ``wrong``; the course, the package and ``OUT`` are as the
grader left them; no process the students started is alive; no secret, seed or hidden-test
source reached ``OUT``; every feedback page is free of scripts. ``CASES`` below is the table of
cases with what each must come to.
"""
from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat
import pytest

from gpudl import notebooks
from gpudl_instructor import pipeline, sandbox
from conftest import ROOT, SECRET
from conftest import student_copy as conftest_student_copy

LAB = "lab01_performance_basics"
SOLUTION = ROOT / "solutions" / LAB / f"{LAB}.ipynb"
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"
FULL = 32.0
WRONG = 26.0                    # `wrong`: bound always 'compute' (4 points), utilization in percent (2)
MARKER = "gpudl-hostile-marker"

pytestmark = [pytest.mark.xdist_group("hostile"),   # its module fixture once, on one worker
              pytest.mark.slow,
              pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")]


def student_copy() -> nbformat.NotebookNode:
    return conftest_student_copy(LAB)


def wrong_copy() -> nbformat.NotebookNode:
    nb = student_copy()
    nb = notebooks.replace_source(nb, "bound", "def bound(flops, nbytes, peak_flops, peak_bandwidth):\n"
                                               "    return 'compute'\n")
    return notebooks.replace_source(nb, "utilization", "def utilization(achieved, peak):\n"
                                                       "    return 100 * achieved / peak\n")


def add_cell(nb: nbformat.NotebookNode, code: str, after: str = "setup") -> nbformat.NotebookNode:
    """A plain code cell of the student's, after the cell ``after`` (or at the end)."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    new = nbformat.v4.new_code_cell(code)
    index = next((i for i, c in enumerate(nb.cells)
                  if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == after), len(nb.cells) - 1)
    nb.cells.insert(index + 1, new)
    return nb


def write(nb: nbformat.NotebookNode, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / f"{LAB}.ipynb"))


@dataclass
class Ctx:
    """What the cases may refer to: the paths a hostile student would guess."""

    subs: Path
    out: Path
    host_tmp: Path
    port: int


@dataclass
class Case:
    name: str
    kind: str
    what: str
    build: Callable[[Ctx, Path], None]           # writes the submission into the folder given
    expect: str                                  # the safe outcome, in words (for the table)


def cheat(code: str, after: str = "setup") -> Callable[[Ctx, Path], None]:
    return lambda ctx, folder: write(add_cell(wrong_copy(), code, after), folder)


def hostile(code_fn: Callable[[Ctx], str], base: Callable[[], nbformat.NotebookNode] = student_copy,
            after: str = "setup") -> Callable[[Ctx, Path], None]:
    return lambda ctx, folder: write(add_cell(base(), code_fn(ctx), after), folder)


def _symlink_to(target: Callable[[Ctx], Path]) -> Callable[[Ctx, Path], None]:
    def build(ctx: Ctx, folder: Path) -> None:
        folder.symlink_to(target(ctx))
    return build


def _symlinked_notebook(ctx: Ctx, folder: Path) -> None:
    folder.mkdir()
    (folder / f"{LAB}.ipynb").symlink_to(ctx.subs / "alice" / f"{LAB}.ipynb")


def _no_setup(ctx: Ctx, folder: Path) -> None:
    nb = student_copy()
    nb.cells = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "setup"]
    write(nb, folder)


CASES = [
    Case("alice", "correct", "the solution notebook", lambda ctx, f: write(notebooks.read(SOLUTION), f), "32/32"),
    Case("bob", "correct", "a correct student copy", lambda ctx, f: write(student_copy(), f), "32/32"),
    Case("wrong", "baseline", "two wrong answers (bound, utilization)", lambda ctx, f: write(wrong_copy(), f),
         "26/32"),
    # --- forged scores: the wrong answers plus a trick ------------------------------------------
    Case("rebind_check", "forgery", "rebinds the lab's checks to no-ops",
         cheat("check.bound = lambda *a, **k: None\ncheck.utilization = lambda *a, **k: None"), "<= 26"),
    Case("rebind_module", "forgery", "replaces every public name of gpudl.grading.lab01 through sys.modules",
         cheat("import sys\nm = sys.modules['gpudl.grading.lab01']\n"
               "for n in [n for n in dir(m) if not n.startswith('_')]:\n    setattr(m, n, lambda *a, **k: None)"),
         "<= 26"),
    Case("input_transformer", "forgery", "an IPython input transformer that empties every test cell",
         cheat("get_ipython().input_transformers_post.append(\n"
               "    lambda lines: ['pass\\n'] if any('check.' in l for l in lines) else lines)"), "<= 26"),
    Case("custom_exc", "forgery", "an IPython exception handler that swallows every error",
         cheat("get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)"), "<= 26"),
    Case("patch_comparisons", "forgery", "no-op assert_equal, assert_close, check_cases in gpudl.grading",
         cheat("import gpudl.grading as g\nfor n in ('assert_equal', 'assert_close', 'check_cases', 'check_choice'):\n"
               "    setattr(g, n, lambda *a, **k: None)"), "<= 26"),
    Case("remote_off", "forgery", "turns the checker off in the kernel and no-ops the local checks",
         cheat("import gpudl.grading.boundary as c, gpudl.grading as g\nc.remote_enabled = lambda: False\n"
               "g.check_cases = lambda *a, **k: None\ng.assert_equal = lambda *a, **k: None"), "<= 26"),
    Case("fake_remote", "forgery", "replaces the kernel's side of the checker with a no-op",
         cheat("import gpudl.grading.boundary as c\nc.run_remote = lambda *a, **k: None"), "<= 26"),
    Case("frame_hack", "forgery", "rewrites the code object that reports a check's outcome",
         cheat("import gpudl.grading.boundary as b\nb._outcome_value.__code__ = (lambda o, w, a: None).__code__\n"
               "b.passed.__code__ = (lambda hidden: None).__code__"), "<= 26"),
    Case("lying_values", "forgery", "answers that lie: __eq__ always True, a float whose __eq__ lies",
         cheat("class Yes(str):\n    def __eq__(self, o): return True\n    def lower(self): return self\n"
               "    def strip(self): return self\n    __hash__ = str.__hash__\n"
               "class F(float):\n    def __eq__(self, o): return True\n    def __sub__(self, o): return 0.0\n"
               "def bound(flops, nbytes, peak_flops, peak_bandwidth):\n    return Yes('compute')\n"
               "def utilization(achieved, peak):\n    return F(100 * achieved / peak)",
               after="utilization"), "<= 26"),
    Case("launder_reference", "forgery", "calls the package's reference through __wrapped__ and __closure__",
         cheat("from gpudl import hardware\nref = hardware.peak_flops\n"
               "inner = getattr(ref, '__wrapped__', None) or next(c.cell_contents for c in ref.__closure__ "
               "if callable(c.cell_contents))\n"
               "def peak_from_spec(spec, dtype, tensor_cores=True):\n"
               "    return inner(spec, dtype, tensor_cores=tensor_cores)", after="peak_from_spec"), "<= 26"),
    Case("helper_process", "forgery", "answers bound from a server process it started before the checks",
         cheat("import json, subprocess, sys\n"
               "_server = subprocess.Popen([sys.executable, '-u', '-c', 'import json, sys\\n'\n"
               "    'for line in sys.stdin:\\n    f, b, pf, pb = json.loads(line)\\n'\n"
               "    '    print(\"memory\" if f / b < pf / pb else \"compute\", flush=True)'],\n"
               "    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)\n"
               "def bound(flops, nbytes, peak_flops, peak_bandwidth):\n"
               "    _server.stdin.write(json.dumps([flops, nbytes, peak_flops, peak_bandwidth]) + '\\n')\n"
               "    _server.stdin.flush()\n"
               "    return _server.stdout.readline().strip()", after="bound"), "<= 26"),
    # --- symbolic links --------------------------------------------------------------------------
    Case("link_to_solution", "symlink", "the submission folder is a link to the instructor's solutions",
         _symlink_to(lambda ctx: SOLUTION.parent), "not graded, reason 'symbolic link', target not echoed"),
    Case("link_to_other", "symlink", "the notebook is a link to another student's notebook", _symlinked_notebook,
         "not graded, reason 'symbolic link'"),
    Case("link_to_passwd", "symlink", "the submission folder is a link to /etc/passwd",
         _symlink_to(lambda ctx: Path("/etc/passwd")), "not graded; nothing of /etc/passwd in grades.csv"),
    # --- secrets and hidden tests ------------------------------------------------------------------
    Case("secret_hunt", "secrets", "prints the environment, /proc of every process, and any secret file",
         hostile(lambda ctx: f"import os, glob\nprint('ENV', dict(os.environ))\n"
                 f"for p in glob.glob('/proc/*/cmdline') + glob.glob('/proc/*/environ'):\n"
                 f"    try: print(p, open(p, 'rb').read()[:2000])\n    except OSError: pass\n"
                 f"for p in ['{ROOT}/.gpudl-secret', os.path.expanduser('~/.gpudl-secret')]:\n"
                 f"    try: print('SECRET', open(p).read())\n    except OSError as e: print('no', p, e)"),
         "no secret and no seed anywhere in OUT"),
    Case("file_hunt", "secrets", "looks for gradebooks, notebooks and hidden tests on the filesystem",
         hostile(lambda ctx: "import os, sys\nfound = []\n"
                 "for d, dirs, files in os.walk('/'):\n"
                 "        if d.startswith(('/proc', '/sys', '/usr', '/dev', sys.prefix, sys.base_prefix)) "
                 "or 'site-packages' in d: dirs[:] = []; continue\n"
                 "        found += [os.path.join(d, f) for f in files if f.endswith(('.db', '.ipynb', 'secret'))]\n"
                 "print('FOUND', len(found), found[:20])"),
         "finds no gradebook, no notebook, no secret"),
    # --- one student against the others ------------------------------------------------------------------
    Case("write_out", "cross", "tries to write OUT's gradebook, its nbgrader_config.py and the grades",
         hostile(lambda ctx: f"for p in ['{ctx.out}/gradebook.db', '{ctx.out}/nbgrader_config.py', "
                 f"'{ctx.out}/grades.csv']:\n"
                 f"    try:\n        open(p, 'a').write('\\nimport os; os.system(\"touch /tmp/pwned\")\\n')\n"
                 f"        print('WROTE', p)\n    except OSError as e: print('refused', p, e)"),
         "OUT unchanged by student code"),
    Case("read_others", "cross", "reads the other submissions",
         hostile(lambda ctx: f"import glob\nprint('OTHERS', glob.glob('{ctx.subs}/*/*.ipynb'))"),
         "sees no other submission"),
    Case("edit_package", "cross", "edits the installed gpudl package to sabotage later students",
         hostile(lambda ctx: "import gpudl.grading.lab01 as m, os\n"
                 "for p in [m.__file__, os.path.join(os.path.dirname(m.__file__), '__init__.py')]:\n"
                 "    try:\n        open(p, 'a').write('\\nraise SystemExit(\"sabotaged\")\\n'); print('EDITED', p)\n"
                 "    except OSError as e: print('refused', p, e)"),
         "package unchanged; later students keep full marks"),
    Case("daemon", "cross", "leaves a daemon that changes grades after grading",
         hostile(lambda ctx: f"import os, subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                 f"'import time,sys; time.sleep(8); open(\"{ctx.host_tmp}/daemon-was-here\", \"w\").write(\"x\"); "
                 f"open(\"{ctx.out}/gradebook.db\", \"w\").write(\"\")', '{MARKER}'], start_new_session=True, "
                 f"stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\nprint('daemon started')"),
         "no process survives; CSV and gradebook agree"),
    # --- resources ------------------------------------------------------------------------------------
    Case("mem_bomb", "resources", "allocates 6 GiB",
         hostile(lambda ctx: "try:\n    b = bytearray(6 << 30)\n    print('ALLOCATED 6 GiB')\n"
                 "except MemoryError:\n    print('refused')"), "the allocation fails; full marks otherwise"),
    Case("fork_bomb", "resources", "forks until it cannot",
         hostile(lambda ctx: f"import os, sys, time\nn = 0\ntry:\n    for i in range(5000):\n"
                 f"        if os.fork() == 0:\n            sys.argv[0] = '{MARKER}'\n            time.sleep(60)\n"
                 f"            os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint('FORKED', n)"),
         "stopped by the process limit; no process survives"),
    Case("cpu_spin", "resources", "an exercise that spins forever",
         lambda ctx, f: write(notebooks.replace_source(student_copy(), "peak_flops_from_units",
                              "def peak_flops_from_units(sms, fma, clock):\n    while True:\n        pass\n"), f),
         "that exercise times out (4 points), the rest graded"),
    Case("big_file", "resources", "writes a 1 GiB file",
         hostile(lambda ctx: "try:\n    with open('big.bin', 'wb') as f:\n"
                 "        for _ in range(1024): f.write(b'0' * (1 << 20))\n    print('WROTE 1 GiB')\n"
                 "except OSError as e:\n    print('refused', e)"), "refused; nothing of it in OUT"),
    Case("big_output", "resources", "prints 50 MB",
         hostile(lambda ctx: "for _ in range(50):\n    print('x' * (1 << 20))"), "truncated; small feedback"),
    Case("huge_message", "resources", "sends one 300 MiB output (one message to the grader)",
         hostile(lambda ctx: "from IPython.display import display\n"
                 "display({'text/plain': 'y' * (300 << 20)}, raw=True)"),
         "refused by the grader's socket; not graded, with the reason"),
    Case("pipe_holder", "resources", "a child that keeps the kernel's output open and never exits",
         hostile(lambda ctx: f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', "
                 f"'import time; time.sleep(1000)', '{MARKER}'], start_new_session=True)\nprint('child started')"),
         "graded within its time; the child is gone"),
    Case("network", "resources", "connects to a TCP listener on the machine's loopback",
         hostile(lambda ctx: f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {ctx.port}), timeout=2)"
                 f"\n    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e)"),
         "no connection reaches the listener"),
    # --- feedback that attacks its reader -----------------------------------------------------------------
    Case("xss", "feedback", "script and event handlers in markdown and outputs",
         lambda ctx, f: write(_xss(), f), "no script, no handler, no javascript: link in feedback"),
    Case("hidden_only", "feedback", "passes the visible cases by lookup and fails the hidden ones",
         lambda ctx, f: write(notebooks.replace_source(student_copy(), "utilization",
                              "def utilization(achieved, peak):\n"
                              "    return {(200e9, 1e12): 0.2, (90e12, 125e12): 0.72}.get((achieved, peak), 0.5)\n"), f),
         "30/32; its feedback names the failure, shows no hidden test and no path of the machine"),
    # --- honest work -------------------------------------------------------------------------------------
    Case("stderr_thread", "honest", "a correct solution that writes to stderr from a thread and a descriptor",
         lambda ctx, f: write(notebooks.replace_source(student_copy(), "batch_latency",
                              "import os, sys, threading\n"
                              "def batch_latency(throughput_fps, batch):\n"
                              "    threading.Thread(target=lambda: print('thread noise', file=sys.stderr)).start()\n"
                              "    os.write(2, b'fd noise\\n')\n"
                              "    return batch / throughput_fps\n"), f), "32/32"),
    Case("no_setup", "honest", "a correct solution whose setup cell was deleted", _no_setup, "32/32, restored"),
    Case("marker_comment", "honest", "a correct solution with a hidden-test marker in a comment",
         lambda ctx, f: write(notebooks.replace_source(student_copy(), "utilization",
                              "# ### BEGIN HIDDEN TESTS (I read the docs)\n"
                              "def utilization(achieved, peak):\n    return achieved / peak\n"), f),
         "32/32 and a feedback page"),
]


def _xss() -> nbformat.NotebookNode:
    nb = add_cell(student_copy(),
                  "from IPython.display import HTML, Javascript, display\n"
                  "display(HTML('<img src=x onerror=\"alert(1)\"><a href=\"javascript:alert(2)\">x</a>'"
                  "'<script>alert(3)</script>'))\n"
                  "display(Javascript('alert(4)'))\n"
                  "print('<script>alert(5)</script>')")
    nb.cells.insert(1, nbformat.v4.new_markdown_cell('<script>alert(6)</script><img src=y onerror="alert(7)">'))
    return nb


ZIP_CASES = {"kim": "a correct student in the zip", "escape": "a zip entry with an unsafe path (../)",
             "bomb": "a zip member of 1 GiB of zeros", "dup": "two entries that map to the same student",
             "dup-2": "(the second of them)", "zlink": "a symbolic link stored in the zip"}


def _hash_tree(root: Path, pattern: str = "**/*") -> str:
    h = hashlib.sha256()
    for p in sorted(root.glob(pattern)):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _alive_with_marker() -> list[str]:
    alive = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if MARKER in text:
            alive.append(text[:120])
    return alive


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    top = tmp_path_factory.mktemp("hostile")
    subs, out, host_tmp = top / "subs", top / "out", top / "host-tmp"
    subs.mkdir()
    host_tmp.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    hits: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                hits.append("connection")
                conn.close()
            except OSError:
                continue

    threading.Thread(target=accept, daemon=True).start()
    ctx = Ctx(subs, out, host_tmp, listener.getsockname()[1])
    for case in CASES:
        case.build(ctx, subs / case.name)
    before = {"package": _hash_tree(ROOT / "src" / "gpudl", "**/*.py"), "solutions": _hash_tree(ROOT / "solutions")}
    lines: list[str] = []
    start = time.monotonic()
    limits = dict(memory_bytes=2 << 30, processes=128, file_bytes=64 << 20, home_bytes=128 << 20)
    results = pipeline.grade(LAB, subs, out, root=ROOT, secret=SECRET, jobs=2, cell_timeout=20,
                             student_timeout=90, progress=False, echo=lines.append, limits=limits)
    seconds = time.monotonic() - start
    config_after_grading = (out / "nbgrader_config.py").read_bytes()
    time.sleep(10)                      # past the daemon's 8 s: it must be gone by now
    stop.set()
    listener.close()

    # The zip cases: a second batch into the same OUT.
    good = nbformat.writes(student_copy())
    zipped = top / "class.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr(f"kim/{LAB}.ipynb", good)
        zf.writestr(f"../escape/{LAB}.ipynb", good)
        bomb = zipfile.ZipInfo(f"bomb/{LAB}.ipynb")
        bomb.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(bomb, "w", force_zip64=True) as w:
            zero = b"\0" * (1 << 20)
            for _ in range(1024):
                w.write(zero)
        zf.writestr(f"dup_11_22_{LAB}.ipynb", good)
        zf.writestr(f"dup_33_44_{LAB}.ipynb", good)
        link = zipfile.ZipInfo(f"zlink_1_2_{LAB}.ipynb")
        link.external_attr = (0o120777 << 16)
        zf.writestr(link, "/etc/passwd")
    zip_results = pipeline.grade(LAB, zipped, out, root=ROOT, secret=SECRET, jobs=2, cell_timeout=20,
                                 student_timeout=90, progress=False, echo=lines.append, limits=limits)
    return dict(out=out, ctx=ctx, results={r.student: r for r in results}, zip_results={r.student: r for r in zip_results},
                lines=lines, seconds=seconds, before=before, hits=hits, config=config_after_grading)


def _row(bank, student):
    return pipeline.read_scores(bank["out"] / "grades.csv")[student]


def _graded_text(bank, student) -> str:
    """Everything the student's graded notebook printed or showed, as text."""
    path = bank["out"] / "autograded" / student / LAB / f"{LAB}.ipynb"
    if not path.exists():
        return ""
    texts = []
    for cell in nbformat.read(str(path), as_version=4).cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", "") or out.get("evalue", "") or str(out.get("data", {}).get("text/plain", "")))
    return "\n".join(texts)


def test_every_submission_has_exactly_one_row(bank):
    rows = pipeline.read_scores(bank["out"] / "grades.csv")
    expected = {c.name for c in CASES} | set(ZIP_CASES)
    assert set(rows) == expected, f"missing {expected - set(rows)}, extra {set(rows) - expected}"
    assert len(bank["results"]) == len(CASES)


def test_correct_students_keep_full_marks(bank):
    for name in ("alice", "bob", "stderr_thread", "no_setup", "marker_comment", "mem_bomb",
                 "secret_hunt", "file_hunt", "write_out", "read_others", "edit_package", "big_file",
                 "big_output", "network", "xss", "kim"):
        row = _row(bank, name)
        assert row["status"] == "graded" and row["score"] == FULL, f"{name}: {row}"


def test_a_check_refuses_to_run_while_the_notebook_has_another_process_running(bank):
    """A process the notebook started earlier could compute what the check forbids, unwatched:
    while one lives (the daemon's 8 s, the pipe holder's child), the checks
    refuse, and say why. The helper server's cheat, which the old guard let pass (30/32), loses."""
    for name in ("daemon", "pipe_holder", "helper_process"):
        row = _row(bank, name)
        assert row["status"] == "graded" and row["score"] < FULL, f"{name}: {row}"
        assert "left another process running" in _graded_text(bank, name), name
    assert _row(bank, "helper_process")["test_bound"] == 0


def test_no_cheat_beats_the_wrong_answers_it_hides(bank):
    assert _row(bank, "wrong")["score"] == WRONG
    for case in (c for c in CASES if c.kind == "forgery"):
        assert _row(bank, case.name)["score"] <= WRONG, f"{case.name} ({case.what}) scored {_row(bank, case.name)}"
    assert any("review:" in n for n in bank["results"]["rebind_check"].notes), "rebinding is flagged for review"


def test_symlinks_are_refused_and_never_followed(bank):
    csv_text = (bank["out"] / "grades.csv").read_text()
    for name in ("link_to_solution", "link_to_other", "link_to_passwd", "zlink"):
        row = _row(bank, name)
        assert row["status"] == "not graded" and "symbolic link" in row["reason"], row
    assert "root:x:0:0" not in csv_text and str(SOLUTION.parent) not in csv_text


def test_secrets_and_hidden_tests_stay_out_of_reach(bank):
    seeds = [pipeline.student_seed(SECRET, LAB, c.name) for c in CASES]
    for path in bank["out"].rglob("*"):
        if path.is_file() and path.suffix in (".html", ".ipynb", ".csv", ".json"):
            text = path.read_text(errors="replace")
            assert SECRET not in text, f"the secret is in {path}"
            assert not any(s in text for s in seeds), f"a student's seed is in {path}"
    hunt = _graded_text(bank, "file_hunt")
    assert "FOUND 0 []" in hunt, "the kernel found gradebooks, notebooks or secrets"


def test_one_student_cannot_reach_another_or_out(bank):
    assert "WROTE" not in _graded_text(bank, "write_out")
    assert "OTHERS []" in _graded_text(bank, "read_others")
    assert "EDITED" not in _graded_text(bank, "edit_package")
    assert _hash_tree(ROOT / "src" / "gpudl", "**/*.py") == bank["before"]["package"]
    assert _hash_tree(ROOT / "solutions") == bank["before"]["solutions"]
    assert (bank["out"] / "nbgrader_config.py").read_bytes() == bank["config"]
    assert b"pwned" not in bank["config"] and not Path("/tmp/pwned").exists()
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{bank['out'] / 'gradebook.db'}", course_id=pipeline.COURSE_ID) as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions(LAB)}
    rows = pipeline.read_scores(bank["out"] / "grades.csv")
    for student, score in scores.items():
        assert rows[student]["score"] == score, f"the gradebook and grades.csv disagree on {student}"


def test_nothing_survives_grading(bank):
    assert not _alive_with_marker(), f"still running: {_alive_with_marker()}"
    assert not (bank["ctx"].host_tmp / "daemon-was-here").exists(), "a daemon outlived the grading"


def test_limits_hold(bank):
    assert "ALLOCATED 6 GiB" not in _graded_text(bank, "mem_bomb")
    forked = [ln for ln in _graded_text(bank, "fork_bomb").splitlines() if ln.startswith("FORKED")]
    assert forked and int(forked[0].split()[1]) < 128, forked
    assert "WROTE 1 GiB" not in _graded_text(bank, "big_file")
    assert not list(bank["out"].rglob("big.bin"))
    spin = _row(bank, "cpu_spin")
    assert spin["status"] == "graded" and spin["test_peak_flops_from_units"] == 0 and spin["score"] == FULL - 4
    page = bank["out"] / "feedback" / "big_output" / LAB / f"{LAB}.html"
    assert page.stat().st_size < 12 << 20 and "output truncated by the grader" in page.read_text()
    huge = _row(bank, "huge_message")
    assert huge["status"] == "not graded" and "over 256 MiB" in huge["reason"], huge
    assert bank["results"]["pipe_holder"].seconds < 90
    assert not bank["hits"], "a kernel reached a listener on the machine's loopback"
    assert "CONNECTED" not in _graded_text(bank, "network")
    out_bytes = sum(p.stat().st_size for p in bank["out"].rglob("*") if p.is_file())
    assert out_bytes < 200 << 20, f"OUT holds {out_bytes >> 20} MiB"


def test_feedback_cannot_attack_its_reader(bank):
    pages = list((bank["out"] / "feedback").rglob("*.html"))
    assert len(pages) >= 20
    from html.parser import HTMLParser

    class Tags(HTMLParser):
        """Every tag of the page with its attributes (escaped text in the page is not a tag)."""

        def __init__(self):
            super().__init__()
            self.bad: list[str] = []

        def handle_starttag(self, tag, attrs):
            if tag in ("script", "iframe", "object", "embed"):
                self.bad.append(tag)
            for name, value in attrs:
                if name.startswith("on"):
                    self.bad.append(f"{tag} {name}")
                if name in ("href", "src", "action", "data") and (value or "").strip().lower().startswith(
                        ("javascript:", "vbscript:")):
                    self.bad.append(f"{tag} {name}={value}")

    for page in pages:
        parser = Tags()
        parser.feed(page.read_text())
        assert not parser.bad, f"{page}: {parser.bad}"
    xss = (bank["out"] / "feedback" / "xss" / LAB / f"{LAB}.html").read_text()
    assert "&lt;script&gt;alert(6)" in xss and '<img src="x"' not in xss, "payloads stay as inert text"
    assert "<img" in (bank["out"] / "feedback" / "alice" / LAB / f"{LAB}.html").read_text(), "images stay"
    for page in pages:
        text = page.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "hidden=True" not in text, page
        assert str(ROOT) not in text and str(bank["out"]) not in text, page


def test_a_failed_hidden_test_is_explained_without_its_source(bank):
    row = _row(bank, "hidden_only")
    assert row["test_utilization"] == 0 and row["score"] == FULL - 2, row
    assert "utilization" in row["notes"] and not row["notes"].rstrip().endswith(":"), "notes keep the reason"
    page = (bank["out"] / "feedback" / "hidden_only" / LAB / f"{LAB}.html").read_text()
    assert "BEGIN HIDDEN TESTS" not in page and "hidden=True" not in page
    assert "expected" in page, "the teaching message of the failed hidden case is in the feedback"
    for path in (str(ROOT), str(bank["out"]), sys.prefix, str(Path.home()), "/tmp/gpudl-grade-"):
        assert path not in page, f"the feedback shows {path}"


def test_honest_work_never_loses_points_to_the_machinery(bank):
    assert (bank["out"] / "feedback" / "marker_comment" / LAB / f"{LAB}.html").exists()
    assert any("'setup' was deleted" in n for n in bank["results"]["no_setup"].notes)


def test_zip_entries_each_get_their_own_row(bank):
    for name in ("escape", "bomb", "zlink"):
        assert _row(bank, name)["status"] == "not graded"
    assert "unsafe path" in _row(bank, "escape")["reason"]
    assert "limit" in _row(bank, "bomb")["reason"]
    assert _row(bank, "dup")["score"] == FULL and _row(bank, "dup-2")["score"] == FULL


def test_the_bank_is_large_and_reports_its_table(bank, capsys):
    assert len(CASES) + len(ZIP_CASES) >= 25
    with capsys.disabled():
        print(f"\nhostile bank: {len(CASES)} submissions graded in {bank['seconds']:.0f} s "
              f"({bank['seconds'] / len(CASES):.1f} s per student, 2 at a time)")
        for case in CASES:
            row = _row(bank, case.name)
            print(f"  {case.kind:<10} {case.name:<18} {row['status']:<11} {row['score']:>4g}  {case.expect}")
