"""`make lab` serves the course (labs/ and course/) in JupyterLab for students: nbgrader's Validate on,
its instructor panels off, notebooks handed out as the kernel will describe them, no gradebook made.
`gpudl formgrader OUT` serves the formgrader on a grading output."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import nbgrader
import pytest

from conftest import stop_process_group

from gpudl import labserver

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow
STARTED = time.time()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@contextlib.contextmanager
def serving(cmd: list[str], cwd: Path, home: Path, port: int, token: str):
    """A Jupyter server started by ``cmd`` until it answers; stopped (SIGTERM to its group) afterwards."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", JUPYTER_RUNTIME_DIR=str(home / "rt"))
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"{' '.join(cmd[:4])} exited early:\n{proc.stdout.read()[-3000:]}")
            try:
                if get(f"{base}/api/status?token={token}")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not answer within 120 s")
        yield base
    finally:
        stop_process_group(proc)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port, token = free_port(), "gpudl-test-token"
    args = f"--no-browser --port {port} --token {token} --ServerApp.ip=127.0.0.1"
    with serving(["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"], ROOT, tmp_path_factory.mktemp("home"),
                 port, token) as base:
        yield base, token


def _page_config(body: bytes) -> dict:
    m = re.search(rb'<script id="jupyter-config-data" type="application/json">(.*?)</script>', body, re.S)
    assert m, "no jupyter-config-data in the lab page"
    return json.loads(m[1])


def test_lab_page_has_validate_and_not_the_instructor_panels(server):
    base, token = server
    status, body = get(f"{base}/lab?token={token}")
    assert status == 200 and b"JupyterLab" in body
    config = _page_config(body)
    assert "@jupyter/nbgrader" in [e["name"] for e in config["federated_extensions"]]
    disabled = config["disabledExtensions"]
    disabled = set(disabled) if isinstance(disabled, (list, dict)) else set()
    for plugin in labserver.STUDENT_LAB_OFF:
        assert plugin in disabled, plugin
    assert "gpudl" in [e["name"] for e in config["federated_extensions"]]      # gpudl's Validate, on labs only


def test_nbgrader_server_side_validate_only(server):
    base, token = server
    assert get(f"{base}/nbgrader_version?version={nbgrader.__version__}&token={token}")[0] == 200  # Validate's
    for url in ("formgrader", "assignments", "courses", "formgrader/api/students"):
        assert get(f"{base}/{url}?token={token}")[0] == 404, f"/{url} is served to students"


def test_labs_and_lectures_are_served_from_one_root(server):
    base, token = server
    status, body = get(f"{base}/api/contents/labs/lab01_performance_basics/lab01_performance_basics.ipynb?token={token}")
    assert status == 200
    model = json.loads(body)
    assert model["type"] == "notebook" and len(model["content"]["cells"]) > 10
    assert "### BEGIN SOLUTION" not in json.dumps(model), "the student server must serve the release, not the solution"
    assert get(f"{base}/api/contents/course/01_performance_basics.ipynb?token={token}")[0] == 200


def test_a_notebook_is_handed_out_as_the_kernel_will_describe_it(server):
    """JupyterLab marks a notebook modified when the kernel's language_info differs from the file's."""
    base, token = server
    path = "labs/lab01_performance_basics/lab01_performance_basics.ipynb"
    on_disk = json.loads((ROOT / path).read_text())["metadata"]["language_info"]
    served = json.loads(get(f"{base}/api/contents/{path}?token={token}")[1])["content"]["metadata"]["language_info"]
    assert served == labserver.kernel_language_info() and served["version"] == platform.python_version()
    assert "version" not in on_disk, "releases store no Python version: they must not depend on who made them"


def test_serving_the_course_makes_no_gradebook(server):
    assert not (ROOT / "gradebook.db").exists() or (ROOT / "gradebook.db").stat().st_mtime < STARTED


def test_without_the_token_access_is_refused(server):
    base, _ = server
    assert get(f"{base}/api/contents")[0] in (401, 403)


def test_nbgrader_server_and_lab_extensions_are_enabled():
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    server = subprocess.run([str(BIN / "jupyter"), "server", "extension", "list"], capture_output=True, text=True, env=env)
    text = server.stdout + server.stderr
    assert "nbgrader" in text and "enabled" in text.split("nbgrader", 1)[1].splitlines()[0], text
    lab = subprocess.run([str(BIN / "jupyter"), "labextension", "list"], capture_output=True, text=True, env=env)
    line = next((ln for ln in (lab.stdout + lab.stderr).splitlines() if "@jupyter/nbgrader" in ln), "")
    assert "enabled" in line and "OK" in line, lab.stdout + lab.stderr


def test_formgrader_serves_a_grading_output_with_named_students(tmp_path, monkeypatch):
    """What `gpudl grade --out OUT` leaves (its config and gradebook), opened with `gpudl formgrader OUT`."""
    from nbgrader.api import Gradebook
    from gpudl_instructor import pipeline

    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ['PATH']}")     # nbgrader runs alembic for a new gradebook
    out = tmp_path / "grades" / "lab01"
    pipeline.generate("lab01_performance_basics", ROOT, out)        # what gpudl grade does first in OUT
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=pipeline.COURSE_ID) as gb:
        gb.add_student("ada-lovelace")                                  # as the grader makes them: an id
        gb.add_student("bob", first_name="Robert", last_name="Builder")  # named by hand: kept
    port, token = free_port(), "gpudl-formgrader-token"
    cmd = [sys.executable, "-m", "gpudl_instructor", "formgrader", str(out), "--no-browser", "--port", str(port),
           "--token", token, "--ServerApp.ip=127.0.0.1"]
    with serving(cmd, tmp_path, tmp_path / "home", port, token) as base:
        with urllib.request.urlopen(f"{base}/?token={token}", timeout=10) as landing:
            where = urllib.parse.urlparse(landing.geturl())      # /formgrader, or its login page on the way there
            assert where.path.startswith("/formgrader") or urllib.parse.parse_qs(where.query).get("next", [""])[0] \
                .startswith("/formgrader"), landing.geturl()                               # not the Launcher
        status, page = get(f"{base}/formgrader/manage_assignments?token={token}")
        assert status == 200 and b"Manage Assignments" in page
        students = {s["id"]: s for s in json.loads(get(f"{base}/formgrader/api/students?token={token}")[1])}
        assignments = json.loads(get(f"{base}/formgrader/api/assignments?token={token}")[1])
    assert (students["ada-lovelace"]["first_name"], students["ada-lovelace"]["last_name"]) == ("ada", "lovelace")
    assert (students["bob"]["first_name"], students["bob"]["last_name"]) == ("Robert", "Builder")
    assert [a["name"] for a in assignments] == ["lab01_performance_basics"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades", "home"], "the formgrader wrote outside OUT"
