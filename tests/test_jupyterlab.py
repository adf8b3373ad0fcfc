"""`make lab` serves the labs in JupyterLab with nbgrader's extensions enabled."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


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


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port, token = free_port(), "gpudl-test-token"
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", JUPYTER_RUNTIME_DIR=str(home / "rt"))
    args = f"--no-browser --port {port} --token {token} --ServerApp.ip=127.0.0.1"
    proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"make lab exited early:\n{proc.stdout.read()[-3000:]}")
            try:
                if get(f"{base}/api/status?token={token}")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not answer within 120 s")
        yield base, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def test_lab_page_is_served_with_nbgrader_extension(server):
    base, token = server
    status, body = get(f"{base}/lab?token={token}")
    assert status == 200 and b"JupyterLab" in body
    assert b"@jupyter/nbgrader" in body, "nbgrader's lab extension is not in the page's extension list"


def test_a_lab_notebook_is_served_through_the_contents_api(server):
    base, token = server
    status, body = get(f"{base}/api/contents/lab01_performance_basics/lab01_performance_basics.ipynb?token={token}")
    assert status == 200
    model = json.loads(body)
    assert model["type"] == "notebook" and len(model["content"]["cells"]) > 10
    assert "### BEGIN SOLUTION" not in json.dumps(model), "the student server must serve the release, not the solution"


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
