"""gpudl_instructor.submissions: one row per submission, links refused, sizes checked first, repairs in place."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

import nbformat
import pytest

from gpudl import notebooks
from gpudl_instructor import submissions
from conftest import ROOT

LAB = "lab01_performance_basics"
RELEASE = ROOT / "labs" / LAB / f"{LAB}.ipynb"


def released() -> nbformat.NotebookNode:
    return notebooks.read(RELEASE)


def write(folder: Path, nb: nbformat.NotebookNode | str = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{LAB}.ipynb"
    path.write_text(nb if isinstance(nb, str) else nbformat.writes(nb or released()))
    return path


def test_a_missing_folder_does_not_exist(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        submissions.find_submissions(tmp_path / "nope", LAB)


def test_links_are_refused_without_following_or_echoing_them(tmp_path):
    subs = tmp_path / "subs"
    write(subs / "alice")
    (subs / "mallory").symlink_to("/etc")
    (subs / "eve").mkdir()
    (subs / "eve" / f"{LAB}.ipynb").symlink_to(subs / "alice" / f"{LAB}.ipynb")
    (subs / "trudy.ipynb").symlink_to("/etc/passwd")
    found = {s.student: s for s in submissions.find_submissions(subs, LAB)}
    assert set(found) == {"alice", "mallory", "eve", "trudy"}
    for name in ("mallory", "eve", "trudy"):
        assert found[name].notebook is None and "symbolic link" in found[name].problem
        assert "/etc" not in found[name].problem and "alice" not in found[name].problem


def test_oversized_notebooks_are_refused_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_FILE_BYTES", 1000)
    subs = tmp_path / "subs"
    write(subs / "big", "x" * 5000)
    found = submissions.find_submissions(subs, LAB)
    assert found[0].notebook is None and "limit" in found[0].problem
    zipped = tmp_path / "bomb.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"bomb/{LAB}.ipynb", "0" * 100_000)         # compresses to almost nothing
        zf.writestr(f"ok/{LAB}.ipynb", "{}")
    found = {s.student: s for s in submissions.find_submissions(zipped, LAB, workdir=tmp_path / "w")}
    assert "limit" in found["bomb"].problem and found["ok"].notebook is not None
    assert not (tmp_path / "w" / "unzipped" / "bomb" / f"{LAB}.ipynb").exists()


def test_same_names_get_distinct_rows_and_every_entry_one_row(tmp_path):
    zipped = tmp_path / "canvas.zip"
    good = nbformat.writes(released())
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr(f"kim_1_2_{LAB}.ipynb", good)
        zf.writestr(f"kim_3_4_{LAB}.ipynb", good)
        zf.writestr(f"kim_5_6_{LAB}.ipynb", good)
        zf.writestr(f"/abs_7_8_{LAB}.ipynb", good)
    found = [s.student for s in submissions.find_submissions(zipped, LAB, workdir=tmp_path / "w")]
    assert sorted(found) == ["abs", "kim", "kim-2", "kim-3"]


def test_inspection_reports_invalid_json_in_one_line(tmp_path):
    path = write(tmp_path / "a", '{"cells": [ {"cell_type": "code", ' + "x" * 10_000)
    problem, _ = submissions.inspect_submission(path, released())
    assert problem.startswith("invalid notebook") and len(problem) < 300


def test_repair_restores_a_deleted_cell_where_it_stood(tmp_path):
    nb = released()
    order = [c.metadata.nbgrader["grade_id"] for c in nb.cells if c.get("metadata", {}).get("nbgrader")]
    nb.cells = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") not in ("setup", "test_bound")]
    extra = nbformat.v4.new_code_cell("x = 1   # a student's own cell")
    nb.cells.insert(3, extra)
    path = write(tmp_path / "a", nb)
    problem, notes = submissions.inspect_submission(path, released())
    assert not problem and any("'setup' was deleted" in n for n in notes) and any("'test_bound'" in n for n in notes)
    fixed = nbformat.read(str(submissions.repair(path, released(), tmp_path / "fixed.ipynb")), as_version=4)
    got = [c.metadata.nbgrader["grade_id"] for c in fixed.cells if c.get("metadata", {}).get("nbgrader")]
    assert got == order, "every graded cell present, in the release's order"
    assert any(c.source.startswith("x = 1") for c in fixed.cells), "the student's own cell is kept"


def test_hidden_test_markers_in_a_students_cell_are_made_inert(tmp_path):
    nb = notebooks.replace_source(released(), "bound", "# ### BEGIN HIDDEN TESTS\ndef bound(*a):\n    return 'memory'\n")
    path = write(tmp_path / "a", nb)
    fixed = nbformat.read(str(submissions.repair(path, released(), tmp_path / "f.ipynb")), as_version=4)
    src = notebooks.find_cell(fixed, "bound").source
    assert "BEGIN HIDDEN TESTS" not in src and "def bound" in src


def test_review_flags_name_code_that_reaches_into_the_grader(tmp_path):
    nb = notebooks.replace_source(released(), "bound", "import sys\ncheck.bound = None\n"
                                  "sys.modules['gpudl'].x = 1\ndef bound(*a):\n    return 'memory'\n")
    nb.cells.append(nbformat.v4.new_code_cell("get_ipython().set_custom_exc((Exception,), print)"))
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and "rebinds check.bound" in f for f in flags), flags
    assert any("get_ipython" in f or "set_custom_exc" in f for f in flags), flags
    honest = submissions.review_flags(write(tmp_path / "b", released()), released())
    assert honest == []


def test_review_flags_name_code_that_switches_off_torchs_hand_off_to_the_guard(tmp_path):
    """The guard catches torch routines through a TorchFunctionMode (gpudl.grading.forbidden):
    code that disables it, or routes calls through its own __torch_function__, is for review."""
    nb = notebooks.replace_source(released(), "bound", "import torch\ndef bound(*a):\n"
                                  "    with torch._C.DisableTorchFunction():\n        return 'memory'\n")
    nb = notebooks.replace_source(nb, "utilization", "class T:\n    @classmethod\n"
                                  "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                                  "        return func(*args)\ndef utilization(a, p):\n    return a / p\n")
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and "DisableTorchFunction" in f for f in flags), flags
    assert any("cell 'utilization'" in f and "defines __torch_function__" in f for f in flags), flags


def test_review_flags_name_torchs_compilers_and_not_triton(tmp_path):
    """TorchScript and torch.compile run torch routines where the guard cannot see them; Triton's
    @triton.jit, which the labs ask for, is no such thing."""
    nb = notebooks.replace_source(released(), "bound", "import torch\n@torch.jit.script\ndef bound(x: float):\n"
                                  "    return x\n")
    nb = notebooks.replace_source(nb, "utilization", "from torch import compile as c\nimport triton\n"
                                  "@triton.jit\ndef k(x):\n    pass\ndef utilization(a, p):\n    return a / p\n")
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and "torch.jit" in f for f in flags), flags
    assert any("cell 'utilization'" in f and "torch's compile" in f for f in flags), flags
    only_triton = notebooks.replace_source(released(), "utilization", "import triton\n@triton.jit\ndef k(x):\n"
                                           "    pass\ndef utilization(a, p):\n    return a / p\n")
    assert submissions.review_flags(write(tmp_path / "b", only_triton), released()) == []


def test_review_flags_name_code_that_drives_the_autograd_engine_itself(tmp_path):
    """Under torch.autograd.grad and backward (which lab06 forbids) is the engine, a C method the
    guard cannot watch: code that reaches it is for review."""
    nb = notebooks.replace_source(released(), "bound", "import torch\ndef bound(*a):\n"
                                  "    engine = torch.autograd.Variable._execution_engine\n    return 'memory'\n")
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and "_execution_engine" in f for f in flags), flags


def test_review_flags_name_code_that_touches_tracemalloc(tmp_path):
    """lab07's memory check reads tracemalloc in the student's process: stopping or resetting it
    there would hide the score matrix, so importing it is for review."""
    nb = notebooks.replace_source(released(), "bound", "from tracemalloc import stop\ndef bound(*a):\n"
                                  "    stop()\n    return 'memory'\n")
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and "imports tracemalloc" in f for f in flags), flags


@pytest.mark.parametrize("source, flagged", [
    ("import subprocess\ndef bound(*a):\n    return subprocess.run(['true'])\n", "imports subprocess"),
    ("from multiprocessing import get_context\ndef bound(*a):\n    return get_context\n", "imports multiprocessing"),
    ("from _posixsubprocess import fork_exec\ndef bound(*a):\n    return fork_exec\n", "imports _posixsubprocess"),
    ("import os\ndef bound(*a):\n    return os.posix_spawn\n", "uses .posix_spawn"),
    ("import torch.utils.cpp_extension as ext\ndef bound(*a):\n    return ext\n", "cpp_extension"),
    ("import os\nos.system('python3 server.py &')\ndef bound(*a):\n    return 'memory'\n", "uses os.system"),
    ("from os import system\ndef bound(*a):\n    return system\n", "uses os.system"),
], ids=["subprocess", "multiprocessing", "_posixsubprocess", "os.posix_spawn", "cpp_extension", "os.system",
        "from os import system"])
def test_review_flags_name_code_that_reaches_another_process(tmp_path, source, flagged):
    """The guard refuses to start a process while the student's code runs, but a process started
    before (at the notebook's top, a server the code then asks) or a fork_exec bound before it is
    not seen, and C++ compiled into the process is not watched: all for review."""
    nb = notebooks.replace_source(released(), "bound", source)
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and flagged in f for f in flags), flags


@pytest.mark.parametrize("source, flagged", [
    ("%matplotlib inline\nimport ctypes\ndef bound(*a):\n    return 'memory'\n", "line 2: imports ctypes"),
    ("!python3 server.py &\ndef bound(*a):\n    return 'memory'\n", "runs a shell command (!)"),
    ("def bound(*a):\n    out = !echo memory\n    return out[0]\n", "line 2: runs a shell command (!)"),
    ("%%bash\npython3 server.py &\n", "runs a shell command (%%bash)"),
    ("%time import ctypes\ndef bound(*a):\n    return 'memory'\n", "line 1: imports ctypes"),
    ("%%timeit -n 1 import gc\nx = 1\n", "imports gc"),
    ("%%capture out\nimport subprocess\n", "imports subprocess"),
    ("%env NBGRADER_EXECUTION=\ndef bound(*a):\n    return 'memory'\n", "uses the magic %env"),
    ("%%writefile helper.py\nimport ctypes\n", "uses the magic %%writefile"),
], ids=["after-a-magic", "shell-escape", "shell-escape-in-a-function", "bash-cell", "time-line", "timeit-setup",
        "capture-body", "env", "writefile"])
def test_review_flags_read_cells_written_in_ipythons_syntax(tmp_path, source, flagged):
    """A cell with one line of IPython's syntax is not Python, and was skipped whole: a ``%matplotlib``
    line hid the ``import ctypes`` below it, and a shell escape that starts a server went unnamed.
    Magics are read as the calls IPython makes of them, and the code a timing magic runs as the cell's."""
    nb = notebooks.replace_source(released(), "bound", source)
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and flagged in f for f in flags), flags


def test_review_flags_leave_magics_that_only_show_or_time_honest_code(tmp_path):
    source = ("%matplotlib inline\n%timeit -n 10 -r 2 sum([1, 2])\nlen?\n"
              "def bound(*a):\n    return 'memory'\n%time bound(1)\n")
    nb = notebooks.replace_source(released(), "bound", source)
    nb.cells.append(nbformat.v4.new_code_cell("%%timeit -n 1\nbound(2)\n"))
    assert submissions.review_flags(write(tmp_path / "a", nb), released()) == []


@pytest.mark.parametrize("source, flagged", [
    ("import gpudl.collectives.launch as L\ndef bound(*a):\n    return L._zygote_for({})\n",
     "uses the package's private L._zygote_for"),
    ("import gpudl\ndef bound(*a):\n    return gpudl.collectives.launch._zygote\n",
     "uses the package's private gpudl.collectives.launch._zygote"),
    ("from gpudl.collectives.launch import _Zygote\ndef bound(*a):\n    return _Zygote\n",
     "imports the package's private _Zygote"),
    ("import gpudl._launch\ndef bound(*a):\n    return 'memory'\n", "imports the package's private gpudl._launch"),
], ids=["alias", "chain", "from-import", "module"])
def test_review_flags_name_the_packages_private_names(tmp_path, source, flagged):
    """The guard lets the package start processes for its own checks (lab 10's launcher, lab 04's
    sanitizer); its public entries refuse a student's call under a guard, its private parts cannot
    tell who called: code that reaches them is for review. Public names and dunders are not."""
    nb = notebooks.replace_source(released(), "bound", source)
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and flagged in f for f in flags), flags
    honest = notebooks.replace_source(released(), "bound", "import gpudl, numpy as np\nv = gpudl.__version__\n"
                                      "z = np._NoValue\ndef bound(*a):\n    return 'memory'\n")
    assert submissions.review_flags(write(tmp_path / "b", honest), released()) == []


def test_names_for_the_gradebook():
    assert submissions.split_name("ada-lovelace") == ("ada", "lovelace")
    assert submissions.split_name("alice") == ("", "alice")
    assert submissions.student_id("Jane Doe") == "Jane-Doe"
    assert "/" not in submissions.student_id("a/../b") and not submissions.student_id("../x").startswith(".")
    assert submissions.student_id("") == "unknown" and submissions.student_id("ü") == "unknown"


def test_review_flags_name_a_binding_to_a_package_callable_and_reading_package_source(tmp_path):
    """Two attempts a reviewer should see (neither can score: the course edition holds no answer)."""
    nb = notebooks.replace_source(released(), "bound", "bound = check.bound\n")
    nb = notebooks.replace_source(nb, "utilization", "import inspect, gpudl\nsrc = inspect.getsource(gpudl.roofline)\n"
                                  "text = open(gpudl.__file__).read()\ndef utilization(a, p):\n    return a / p\n")
    flags = submissions.review_flags(write(tmp_path / "a", nb), released())
    assert any("cell 'bound'" in f and "binds bound to the package's check.bound" in f for f in flags), flags
    assert any("cell 'utilization'" in f and ("getsource" in f or "__file__" in f) for f in flags), flags
    honest = notebooks.replace_source(released(), "bound", "spec = hardware.H100\ndef bound(*a):\n    return 'memory'\n")
    assert submissions.review_flags(write(tmp_path / "b", honest), released()) == []


def test_the_lms_ids_and_the_late_mark_are_kept(tmp_path):
    subs = tmp_path / "subs"
    write(subs / "Ada Lovelace_731_assignsubmission_file_")
    nb = nbformat.writes(released())
    (subs / f"bob_LATE_1002_2002_{LAB}.ipynb").write_text(nb)
    (subs / f"cy_1003_2003_{LAB}.ipynb").write_text(nb)
    write(subs / "dee")
    found = {s.student: (s.lms, s.lms_id, s.late) for s in submissions.find_submissions(subs, LAB)}
    assert found == {"Ada-Lovelace": ("moodle", "731", False), "bob": ("canvas", "1002", True),
                     "cy": ("canvas", "1003", False), "dee": ("", "", False)}, found


def test_a_notebook_heavy_with_outputs_is_read_without_them_and_code_over_the_limit_is_refused(tmp_path, monkeypatch):
    """Grading makes every output anew: a 60 MB image in an output (here scaled down) costs nothing;
    the limit applies to what must be parsed whole."""
    nb = released()
    monkeypatch.setattr(submissions, "MAX_NOTEBOOK_BYTES", len(nbformat.writes(nb)) + 20_000)
    cell = next(c for c in nb.cells if c.cell_type == "code")
    image = "iVBORw0KGgo" + "A\\\"b" * 30_000                  # escapes in a long string, as base64 never has
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": image, "text/plain": "<Figure>"})]
    md = next(c for c in nb.cells if c.cell_type == "markdown")
    md["attachments"] = {"big.png": {"image/png": "B" * 30_000}}
    path = write(tmp_path / "heavy", nb)
    assert path.stat().st_size > submissions.MAX_NOTEBOOK_BYTES + 100_000
    read, why = submissions._read(path)
    assert why == "" and [c.source for c in read.cells] == [c.source for c in nb.cells]
    assert all(c.get("outputs", []) == [] for c in read.cells if c.cell_type == "code")
    code = nbformat.v4.new_code_cell("x = '" + "y" * 30_000 + "'")
    nb.cells.append(code)
    read, why = submissions._read(write(tmp_path / "code", nb))
    assert read is None and "without its outputs" in why


def test_a_notebook_saved_in_format_3_is_read_as_version_4(tmp_path):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "def utilization(a, p):\n    return a / p", "language": "python",
         "outputs": [], "metadata": {}, "collapsed": False},
        {"cell_type": "markdown", "source": "notes", "metadata": {}}], "metadata": {}}]}
    path = tmp_path / f"{LAB}.ipynb"
    path.write_text(json.dumps(v3))
    nb, why = submissions._read(path)
    assert why == "" and nb.nbformat == 4
    assert nb.cells[0].source.startswith("def utilization") and nb.cells[1].cell_type == "markdown"


def test_a_notebook_from_an_lms_zip_keeps_the_time_it_was_handed_in(tmp_path):
    zipped = tmp_path / "canvas.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"kim_1_2_{LAB}.ipynb", date_time=(2023, 3, 14, 15, 9, 26)),
                    nbformat.writes(released()))
    found = submissions.find_submissions(zipped, LAB, workdir=tmp_path / "w")
    import datetime
    when = datetime.datetime.fromtimestamp(found[0].notebook.stat().st_mtime)
    assert when.timetuple()[:6] == (2023, 3, 14, 15, 9, 26)
