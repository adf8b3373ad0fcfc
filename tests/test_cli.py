"""The gpudl command: doctor's verdicts, release into a course copy, one-line errors, the benchmark registry."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudl import cli

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(*args: str, env: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpudl", *args], cwd=cwd, capture_output=True, text=True,
                          env=env or dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"), timeout=600)


def test_doctor_passes_here_and_names_the_device():
    res = run("doctor")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "device" in res.stdout and "all good" in res.stdout
    assert "lab01_performance_basics" in res.stdout


def test_doctor_fails_with_a_fix_when_alembic_is_not_on_path(tmp_path):
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python").symlink_to(sys.executable)
    env = dict(os.environ, PATH=f"{shim}{os.pathsep}/usr/bin{os.pathsep}/bin")
    res = run("doctor", env=env)
    assert res.returncode == 1
    assert "alembic" in res.stdout and "PATH" in res.stdout


def test_release_regenerates_a_lab_in_a_course_copy(tmp_path):
    course = tmp_path / "course"
    shutil.copytree(ROOT / "solutions", course / "solutions")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    res = run("release", "lab01_performance_basics", cwd=course)
    assert res.returncode == 0, res.stdout + res.stderr
    made = course / "labs" / "lab01_performance_basics" / "lab01_performance_basics.ipynb"
    assert made.read_text() == (ROOT / "labs" / "lab01_performance_basics" / made.name).read_text()
    assert "### BEGIN SOLUTION" not in made.read_text()


@pytest.mark.parametrize("args,says", [
    (("grade", "lab99_nothing", "subs", "--out", "out"), "labs are: lab01_performance_basics"),
    (("grade", "lab01_performance_basics", "no/such/folder", "--out", "out"), "does not exist"),
    (("release", "lab99_nothing"), "labs are: lab01_performance_basics"),
])
def test_a_wrong_name_or_path_is_one_line_that_says_what_exists_not_a_traceback(tmp_path, args, says):
    (tmp_path / "subs").mkdir()
    res = run(*(str(tmp_path / a) if a in ("subs", "no/such/folder", "out") else a for a in args))
    assert res.returncode == 2, res.stdout + res.stderr
    assert says in res.stderr and "Traceback" not in res.stderr
    assert res.stderr.startswith(f"gpudl {args[0]}: error:")


def test_outside_a_course_the_error_names_what_is_missing(tmp_path):
    res = run("release", cwd=tmp_path)
    assert res.returncode == 2 and "no course repository" in res.stderr and "Traceback" not in res.stderr
    debug = run("release", cwd=tmp_path, env=dict(os.environ, GPUDL_DEBUG="1"))
    assert "Traceback" in debug.stderr                    # for developers, on request


def test_run_labs_asks_for_a_gpu_it_does_not_have_with_a_hint(tmp_path):
    from gpudl import hardware
    if hardware.cuda_available():
        pytest.skip("this machine has a GPU: --device cuda is right here")
    res = run("run-labs", "--device", "cuda", "--report", str(tmp_path / "r"), "--no-bench")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "no CUDA device" in res.stderr and "--device cpu" in res.stderr and "Traceback" not in res.stderr


def test_unknown_arguments_are_refused_except_for_lab():
    with pytest.raises(SystemExit):
        cli.main(["doctor", "--frobnicate"])


def test_every_registered_benchmark_is_callable():
    from gpudl import benchmarks
    for name in benchmarks.names():
        assert benchmarks.summary(name), name
    res = run("bench", "--list")
    assert res.returncode == 0
