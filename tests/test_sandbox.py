"""gpudl_instructor.sandbox: what a graded kernel can see, reach and use (small programs, one sandbox each)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudl_instructor import sandbox
from conftest import GUARD_BESIDE_A_CHILD, ROOT

pytestmark = pytest.mark.skipif(not sandbox.available()[0], reason=f"no sandbox here: {sandbox.available()[1]}")


def run(code: str, limits: sandbox.Limits | None = None, **kw) -> subprocess.CompletedProcess:
    box = sandbox.Sandbox(home=None, kernel_dir=kw.pop("kernel_dir", None), limits=limits or sandbox.Limits(), **kw)
    box.prepare()
    try:
        return subprocess.run(box.command([sys.executable, "-c", code]), capture_output=True, text=True, timeout=120,
                              env={**os.environ, "GPUDL_SECRET": "top-secret-value"})
    finally:
        box.kill()


def test_python_and_the_package_work_inside():
    res = run("import gpudl, numpy, os; print(gpudl.DEVICE, os.getcwd())")
    assert res.returncode == 0, res.stderr
    device, cwd = res.stdout.split()
    assert device in ("cpu", "cuda") and cwd == sandbox.HOME


def test_the_course_out_and_secrets_are_not_there():
    res = run(f"""
import os
for p in [{str(ROOT / 'solutions')!r}, {str(ROOT / 'tests')!r}, {str(ROOT / '.gpudl-secret')!r},
          {str(Path.home() / '.ssh')!r}, '/etc/shadow']:
    print(p, os.path.exists(p))
print('ROOT', sorted(os.listdir({str(ROOT)!r})))
print('ENV', sorted(os.environ))
print('SECRET' if any('top-secret' in v for v in os.environ.values()) else 'no secret')
""")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert all(line.endswith("False") for line in lines[:5]), lines[:5]
    root = eval(lines[5].removeprefix("ROOT "))          # the repository is only the path to the package
    assert set(root) <= {"src", ".venv"}, root
    assert "no secret" in res.stdout and "GPUDL_SECRET" not in res.stdout


def test_the_graders_thread_pools_reach_the_kernel(monkeypatch):
    from gpudl_instructor import pipeline

    for name, value in pipeline.thread_env(8, cores=16).items():
        monkeypatch.setenv(name, value)
    res = run("import os, torch; print([os.environ.get(v) for v in "
              f"{list(pipeline.THREAD_VARIABLES)!r}], torch.get_num_threads())")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["['2',", "'2',", "'2',", "'2']", "2"], res.stdout


def test_the_sandbox_holds_the_course_edition_and_nothing_of_the_instructors_part(monkeypatch):
    """The references, the checks and the grader stay outside: not importable, not readable, even
    when the folder around both packages is on PYTHONPATH (as on a GPU runner)."""
    import gpudl_instructor
    src = str(Path(gpudl_instructor.__file__).resolve().parents[1])
    instructor = str(Path(gpudl_instructor.__file__).resolve().parent)
    for pythonpath in ("", src):
        monkeypatch.setenv("PYTHONPATH", pythonpath)
        res = run(f"""
import os, importlib.util
import gpudl.grading.lab06
try:
    import gpudl_instructor.checker
    print('imported', gpudl_instructor.checker.__file__)
except ImportError:
    print('spec None')
print('listing', os.listdir({instructor!r}) if os.path.isdir({instructor!r}) else None)
""")
        assert res.returncode == 0, res.stderr
        assert "spec None" in res.stdout and ("listing None" in res.stdout or "listing []" in res.stdout), res.stdout


def test_the_package_and_python_are_read_only():
    import gpudl
    target = Path(gpudl.__file__)
    res = run(f"open({str(target)!r}, 'a').write('# sabotage')")
    assert res.returncode != 0 and ("Read-only" in res.stderr or "Permission" in res.stderr), res.stderr
    assert "# sabotage" not in target.read_text()


def test_no_network_not_even_the_machines_loopback():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(3)
    port = listener.getsockname()[1]
    res = run(f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('CONNECTED')\n"
              f"except OSError as e:\n    print('refused', e)")
    assert "refused" in res.stdout and "CONNECTED" not in res.stdout
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()


def test_memory_processes_and_file_size_are_bounded():
    limits = sandbox.Limits(memory_bytes=1 << 30, processes=32, file_bytes=1 << 20)
    res = run("""
import os, time
try:
    b = bytearray(2 << 30); print('ALLOCATED')
except MemoryError:
    print('memory refused')
n = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(5); os._exit(0)
        n += 1
except OSError:
    pass
print('forked', n)
try:
    with open('big', 'wb') as f: f.write(b'0' * (2 << 20))
    print('WROTE')
except OSError as e:
    print('file refused')
""", limits=limits)
    assert "memory refused" in res.stdout and "ALLOCATED" not in res.stdout, res.stdout + res.stderr
    assert int(res.stdout.split("forked")[1].split()[0]) < 32
    assert "file refused" in res.stdout


def test_nothing_survives_the_sandbox():
    marker = f"gpudl-sandbox-test-{os.getpid()}"
    res = run(f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', "
              f"'{marker}'], start_new_session=True)\nprint('started')")
    assert "started" in res.stdout
    time.sleep(0.5)
    alive = [p for p in Path("/proc").glob("[0-9]*/cmdline") if marker.encode() in _read(p)]
    assert not alive, "a process outlived its sandbox"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_the_kernel_folder_is_the_one_writable_host_folder(tmp_path):
    kernel = tmp_path / "k"
    res = run(f"open({str(kernel / 'x')!r}, 'w').write('hi')\nopen({str(tmp_path / 'y')!r}, 'w').write('no')",
              kernel_dir=kernel)
    assert (kernel / "x").read_text() == "hi"
    assert not (tmp_path / "y").exists() and res.returncode != 0


def test_limits_are_validated():
    with pytest.raises(ValueError, match="memory_bytes"):
        sandbox.Limits(memory_bytes=0)


_OTHER_PROCESSES = GUARD_BESIDE_A_CHILD + """
subprocess.run(["sh", "-c", "sleep 30 &"])          # a daemon: its parent gone, bubblewrap adopts it
time.sleep(0.3)
attempt("daemon")
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        if open(f"/proc/{pid}/comm").read().strip() == "sleep":
            os.kill(pid, 9)
    except OSError:
        pass
time.sleep(0.3)
child = subprocess.Popen(["sleep", "30"]); child.kill(); time.sleep(0.3)
attempt("zombie")
child.wait()
from gpudl.collectives import launch
launcher = sys.modules["gpudl.collectives.launch"]
assert launch(lambda r, k: r, 2, echo=False) == [0, 1]
zygote = launcher._zygote
attempt("own zygote")
print("own zygote ended", launcher._zygote is None and not zygote.alive())
with grading.guard(label="lab 10's check"):
    launcher._zygote_for(dict(os.environ))       # as the package's launch does under a check's guard
attempt("a check's zygote")
print("a check's zygote kept", launcher._zygote is not None and launcher._zygote.alive())
"""


def test_a_check_refuses_to_run_while_another_process_lives_in_the_sandbox():
    """A server started at the notebook's top is no start the guard sees, so in the sandbox's PID
    namespace a check first looks for any other live process (a child, or a daemon bubblewrap
    adopted) and refuses while one is; a zombie cannot compute, and the package's zygote is ended
    when the student's own launch started it, kept when a check's did."""
    res = run(_OTHER_PROCESSES)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        "alone ran", "child refused True", "ended ran", "daemon refused True", "zombie ran", "own zygote ran",
        "own zygote ended True", "a check's zygote ran", "a check's zygote kept True"], res.stdout + res.stderr


def test_outside_the_sandbox_a_check_leaves_the_machines_processes_alone():
    child = subprocess.Popen(["sleep", "30"])
    try:
        from gpudl import grading
        from gpudl.grading import forbidden

        assert not forbidden._in_the_grading_sandbox() and forbidden.other_processes() == []
        with grading.guard(label="this check"):
            pass
    finally:
        child.kill()
        child.wait()

