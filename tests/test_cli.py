"""The gpudl command: doctor's verdicts, release into a course copy, one-line errors, the benchmark registry."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudl_instructor import cli

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run(*args: str, env: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpudl_instructor", *args], cwd=cwd, capture_output=True, text=True,
                          env=env or dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"), timeout=600)


def test_doctor_passes_here_and_names_the_device():
    res = run("doctor")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "device" in res.stdout and "all good" in res.stdout
    assert "lab01_performance_basics" in res.stdout


def test_doctor_run_as_venv_gpudl_passes_without_the_venv_on_path():
    """`.venv/bin/gpudl doctor` with a PATH that lacks .venv/bin: grading finds alembic next to the
    interpreter, so doctor must too."""
    gpudl = BIN / "gpudl"
    if not gpudl.exists():
        pytest.skip(f"no gpudl script next to {sys.executable} (not installed with pip)")
    env = dict(os.environ, PATH=f"/usr/bin{os.pathsep}/bin")
    res = subprocess.run([str(gpudl), "doctor"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "alembic" not in res.stdout


def test_instructor_doctor_names_a_missing_instructor_distribution(monkeypatch, capsys):
    """A GPU machine's wheelhouse without nh3 graded every student "not graded" while doctor said
    all good: the instructor's doctor checks pyproject's instructor extra."""
    import argparse

    import gpudl.cli
    from gpudl_instructor import cli as instructor_cli

    wanted = instructor_cli.instructor_requirements()
    assert {"nh3", "latex2mathml", "copydetect"} <= set(wanted)
    real = gpudl.cli._version
    monkeypatch.setattr(gpudl.cli, "_version", lambda dist: None if dist == "nh3" else real(dist))
    assert instructor_cli.instructor_doctor(argparse.Namespace()) == 1
    out = capsys.readouterr().out
    assert "nh3         MISSING" in out
    assert f"nh3 is missing: pip install '{wanted['nh3']}'" in out
    assert "all good" not in out


def test_alembic_is_found_next_to_the_interpreter_or_on_path_else_doctor_says_what_to_do(tmp_path):
    bare, tools = tmp_path / "bare", tmp_path / "tools"
    bare.mkdir(), tools.mkdir()
    (tools / "alembic").write_text("#!/bin/sh\n")
    (tools / "alembic").chmod(0o755)
    assert cli.find_alembic(str(bare / "python"), path=str(tools)) == str(tools / "alembic")
    assert cli.find_alembic(str(tools / "python"), path="") == str(tools / "alembic")
    assert cli.find_alembic(str(bare / "python"), path="") is None
    assert cli.find_alembic() is not None          # this environment: alembic comes with nbgrader


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
    (("grade", "lab01_performance_basics", "no/such/folder", "--out", "out"), "no/such/folder does not exist"),
    (("grade", "lab01_performance_basics", "notazip", "--out", "out"), "neither a folder of submissions nor a zip"),
    (("release", "lab99_nothing"), "labs are: lab01_performance_basics"),
    (("release", "lab01_performance"), "did you mean lab01_performance_basics?"),
    (("grade", "lab1_performance_basics", "subs", "--out", "out"), "did you mean lab01_performance_basics?"),
    (("grade", "lab07", "subs", "--out", "out"), "did you mean lab07_attention?"),
    (("formgrader", "subs"), "is not a grading output"),
])
def test_a_wrong_name_or_path_is_one_line_that_says_what_exists_not_a_traceback(tmp_path, args, says):
    (tmp_path / "subs").mkdir()
    (tmp_path / "notazip").write_text("not a zip")
    res = run(*(str(tmp_path / a) if a in ("subs", "no/such/folder", "out", "notazip") else a for a in args))
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


def test_a_new_secret_says_where_it_is_and_that_it_must_be_kept(tmp_path, monkeypatch, capsys):
    from gpudl_instructor import pipeline
    lab = "lab01_performance_basics"
    course = tmp_path / "course"
    (course / "solutions" / lab).mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copy(ROOT / "solutions" / lab / f"{lab}.ipynb", course / "solutions" / lab)
    (course / "subs").mkdir()
    monkeypatch.chdir(course)
    monkeypatch.delenv(pipeline.SECRET_ENV, raising=False)
    # Grading itself is tested in test_pipeline; here only the secret it loads matters.
    monkeypatch.setattr(pipeline, "grade", lambda lab, subs, out, secret=None, **kw: [pipeline.load_secret(None, secret)][:0])
    assert cli.main(["grade", lab, "subs", "--out", "out"]) == 0
    said = capsys.readouterr().out
    assert str(course / pipeline.SECRET_FILE) in said and "Keep it" in said and "back it up" in said
    assert cli.main(["grade", lab, "subs", "--out", "out"]) == 0
    assert "Created" not in capsys.readouterr().out          # said once, when it is made
    assert cli.main(["grade", lab, "subs", "--out", "out", "--secret", "s"]) == 0
    assert "Created" not in capsys.readouterr().out


def test_the_readme_example_folders_are_git_ignored():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    paths = ["submissions/alice/lab01_performance_basics.ipynb", "grades/lab01/grades.csv", "handout/README.md",
             "test-artifacts/lab-teaching-message.png", ".gpudl-secret", "gradebook.db"]
    res = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True)
    assert sorted(res.stdout.split()) == sorted(paths), res.stdout + res.stderr
    readme = (ROOT / "README.md").read_text()
    assert "submissions/ --out grades/lab01" in readme


def test_system_deps_installs_only_what_is_missing_or_says_what_to_install(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "id").write_text("#!/bin/sh\necho 1000\n")       # not root: nothing is installed
    (fake / "id").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    missing = subprocess.run(["make", "--no-print-directory", "system-deps",
                              "SYSTEM_DEPS=gpudl-no-such-tool:gpudl-no-such-package sh:dash"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert missing.returncode == 0, missing.stderr
    assert "sudo apt-get install gpudl-no-such-package" in missing.stdout and "dash" not in missing.stdout
    present = subprocess.run(["make", "--no-print-directory", "system-deps", "SYSTEM_DEPS=sh:dash"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert present.returncode == 0 and present.stdout == ""
    assert re.search(r"^test:.*\bsystem-deps\b", (ROOT / "Makefile").read_text(), re.M)
    # As root: apt-get installs what is missing, and only that (a stand-in apt-get records its arguments).
    (fake / "id").write_text("#!/bin/sh\necho 0\n")
    (fake / "apt-get").write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'apt.log'}\n")
    (fake / "apt-get").chmod(0o755)
    root = subprocess.run(["make", "--no-print-directory", "system-deps",
                           "SYSTEM_DEPS=gpudl-no-such-tool:gpudl-no-such-package sh:dash"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert root.returncode == 0, root.stderr
    assert (tmp_path / "apt.log").read_text().split() == ["install", "-y", "-q", "gpudl-no-such-package"]


def test_unknown_arguments_are_refused_except_for_lab():
    with pytest.raises(SystemExit):
        cli.main(["doctor", "--frobnicate"])


def test_every_registered_benchmark_is_callable():
    from gpudl import benchmarks
    for name in benchmarks.names():
        assert benchmarks.summary(name), name
    res = run("bench", "--list")
    assert res.returncode == 0


def test_make_test_keeps_each_xdist_group_on_one_worker(tmp_path):
    """``make test`` shares a hunt and each lecture's run between the tests of one ``xdist_group``;
    pytest 9.2 silently breaks that grouping (pytest-xdist#1386), which doubled CI's hunt."""
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test:.*\n\t\$\(PYTEST\)", makefile, re.M), "make test runs $(PYTEST)"
    dist = re.search(r"^PYTEST\s*:=.*-m pytest (.*)$", makefile, re.M).group(1)
    assert re.search(r"-n \d", dist) and "--dist loadgroup" in dist
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name in "abc":
        (tmp_path / f"test_{name}.py").write_text(
            "import os, pytest\npytestmark = [pytest.mark.slow, pytest.mark.xdist_group('shared')]\n"
            f"def test_{name}():\n    open('{name}.worker', 'w').write(os.environ['PYTEST_XDIST_WORKER'])\n")
    for i in range(6):
        (tmp_path / f"test_other{i}.py").write_text(f"import time\ndef test_other{i}():\n    time.sleep(0.3)\n")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup",
                          "-p", "no:cacheprovider", "-W", "ignore"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    workers = {name: (tmp_path / f"{name}.worker").read_text() for name in "abc"}
    assert len(set(workers.values())) == 1, f"one group ran on several workers: {workers}"


def test_the_gpu_class_script_makes_a_class_and_checks_its_grades(tmp_path):
    """scripts/gpu_class.py, the GPU runs' class (README, "For GPU runners"): copies of the solution,
    the mutants of the named exercises and the release; its check refuses any exception."""
    lab = "lab02_matmul_flops"
    script = [sys.executable, str(ROOT / "scripts" / "gpu_class.py")]
    res = subprocess.run([*script, "make", lab, str(tmp_path / "subs"), "--copies", "2", "--mutants", "cpu_timer",
                          "--release"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    made = sorted(p.name for p in (tmp_path / "subs").iterdir())
    timers = sorted(p.stem for p in (ROOT / "tests" / "mutants" / lab).glob("cpu_timer__*.py"))
    assert made == sorted(["release", "solution-00", "solution-01", *(f"m-{t}" for t in timers)])
    assert (tmp_path / "subs" / "release" / f"{lab}.ipynb").read_bytes() == (ROOT / "labs" / lab / f"{lab}.ipynb").read_bytes()
    header = "student,status,score,max_score,reason,notes\n"
    rows = {"solution-00": "graded,32,32", "solution-01": "graded,32,32", "release": "graded,0,32",
            **{f"m-{t}": "graded,28,32" for t in timers}}

    def check(changes: dict[str, str]) -> subprocess.CompletedProcess:
        out = tmp_path / f"out{len(changes)}"
        out.mkdir(exist_ok=True)
        (out / "grades.csv").write_text(header + "".join(f"{s},{v},,\n" for s, v in {**rows, **changes}.items()))
        return subprocess.run([*script, "check", lab, str(out)], capture_output=True, text=True, timeout=300)

    good = check({})
    assert good.returncode == 0 and "2 of 2 copies" in good.stdout and "release scored 0" in good.stdout, good.stdout
    for change in ({"solution-01": "graded,26,32"}, {f"m-{timers[0]}": "graded,32,32"}, {"release": "graded,4,32"}):
        assert check(change).returncode == 1, change
