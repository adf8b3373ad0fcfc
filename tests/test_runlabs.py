"""gpudl run-labs: a broken notebook is named with its cell and error, and the run exits non-zero."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpudl import notebooks

ROOT = Path(__file__).resolve().parents[1]
LAB = "lab01_performance_basics"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("runlabs")]   # its module fixture once, on one worker


def run_labs(root: Path, report: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run([sys.executable, "-m", "gpudl_instructor", "run-labs", "--device", "cpu", "--report", str(report),
                           "--root", str(root), *extra], capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def broken_course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", root)
    (root / "course").mkdir()
    nb = notebooks.from_py("# %% [markdown]\n# # A lecture\n\n# %% [code]\nx = 1\n\n"
                           "# %% [code]\nraise ValueError('deliberately broken')\n\n# %% [code]\ny = 2\n")
    nbformat.write(nb, str(root / "course" / "99_broken.ipynb"))
    shutil.copytree(ROOT / "course", root / "course", dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if not n.startswith("01_")])
    solution = notebooks.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb")
    wrong = notebooks.replace_source(solution, "bound", "def bound(f, b, p, w):\n    ### BEGIN SOLUTION\n"
                                     "    return 'compute'\n    ### END SOLUTION\n")
    (root / "solutions" / LAB).mkdir(parents=True)
    nbformat.write(wrong, str(root / "solutions" / LAB / f"{LAB}.ipynb"))
    report = tmp_path_factory.mktemp("report")
    return root, report, run_labs(root, report, "--no-bench")


def test_the_run_exits_non_zero_and_names_the_failures(broken_course):
    _, _, res = broken_course
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAILED course 99_broken" in res.stdout and "cell 2" in res.stdout
    assert "ok     course 01_performance_basics" in res.stdout
    assert f"FAILED lab    {LAB} 28.0/32.0" in res.stdout
    assert "run-labs on the CPU" in res.stdout
    # kernels over IPC, shut down by the run: no ipykernel warnings in a CI log
    assert "IPKernelApp" not in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_the_report_shows_the_failing_cell_and_why(broken_course):
    _, report, _ = broken_course
    md = (report / "report.md").read_text()
    assert "### 99_broken failed" in md and "Cell 2:" in md and "raise ValueError('deliberately broken')" in md
    assert "ValueError: deliberately broken" in md
    assert f"### {LAB} failed" in md and "test_bound" in md
    data = json.loads((report / "report.json").read_text())
    runs = {r["name"]: r for r in data["notebooks"]}
    assert runs["99_broken"]["ok"] is False and runs["99_broken"]["failed_cell"] == 2
    assert runs[LAB]["score"] == 28 and runs[LAB]["max_score"] == 32
    assert data["device"]["device"] == "cpu" and data["device"]["torch"]
    assert (report / "notebooks" / "99_broken.ipynb").exists()
