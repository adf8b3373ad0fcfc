"""What `gpudl lab` and `gpudl formgrader` start, checked without starting them (test_jupyterlab and
test_browser start them)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gpudl import labserver
from gpudl_instructor import formgrader, pipeline, submissions

ROOT = Path(__file__).resolve().parents[1]
NBGRADER_PLUGINS = ("formgrader", "create-assignment", "course-list", "assignment-list", "menu", "validate-assignment")


def test_students_get_validate_and_none_of_nbgraders_instructor_panels(tmp_path):
    config = labserver.write_config(tmp_path / "cfg")
    disabled = json.loads((config / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    for plugin in NBGRADER_PLUGINS[:-1]:
        assert disabled.get(f"@jupyter/nbgrader:{plugin}") is True, plugin
    assert "@jupyter/nbgrader:validate-assignment" not in disabled
    server = json.loads((config / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    assert server == {"nbgrader.server_extensions.validate_assignment": True,
                      "nbgrader.server_extensions.formgrader": False,
                      "nbgrader.server_extensions.course_list": False,
                      "nbgrader.server_extensions.assignment_list": False}
    validate = json.loads((config / "nbgrader_config.json").read_text())
    assert validate["Execute"]["timeout"] == pipeline.DEFAULT_CELL_TIMEOUT


def test_the_plugins_turned_off_exist_in_the_installed_nbgrader():
    """A renamed plugin would silently stay on: the names must be in nbgrader's lab extension."""
    static = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader" / "static"
    text = "".join(p.read_text(errors="replace") for p in static.glob("*.js"))
    for plugin in NBGRADER_PLUGINS:
        assert f'"@jupyter/nbgrader:{plugin}"' in text, plugin


def test_lab_command_serves_the_root_with_gpudls_config_first(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", "/somewhere/else")
    cmd, env = labserver.lab_command(ROOT, tmp_path, port=8999, no_browser=True, token="t", extra=["--x=1"])
    assert cmd[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={ROOT}" in cmd and "--LabApp.default_url=/lab/tree/START.ipynb" in cmd
    assert "--ServerApp.contents_manager_class=gpudl.labserver.ContentsManager" in cmd
    assert {"--port=8999", "--no-browser", "--IdentityProvider.token=t", "--x=1"} <= set(cmd)
    assert env["JUPYTER_CONFIG_PATH"] == f"{tmp_path}{os.pathsep}/somewhere/else"
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)


def test_the_kernel_language_info_is_what_ipykernel_reports():
    from ipykernel.ipkernel import IPythonKernel
    info = labserver.kernel_language_info()
    assert info == IPythonKernel.language_info and info["name"] == "python" and info["version"]


def test_names_from_ids():
    assert submissions.split_name("ada-lovelace") == ("ada", "lovelace")
    assert submissions.split_name("Grace_Brewster_Hopper") == ("Grace Brewster", "Hopper")
    assert submissions.split_name("alice") == ("", "alice")


def test_labserver_imports_without_a_jupyter_server():
    import subprocess
    code = "import sys, gpudl.labserver; print('jupyter_server' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "False", res.stdout + res.stderr


def test_notebooks_are_handed_out_with_the_kernels_language_info_and_saved_unchanged_otherwise(tmp_path):
    import asyncio

    import nbformat
    lab = "lab01_performance_basics"
    (tmp_path / "labs").mkdir()
    original = (ROOT / "labs" / lab / f"{lab}.ipynb").read_text()
    (tmp_path / "labs" / "a.ipynb").write_text(original)
    (tmp_path / "labs" / "notes.txt").write_text("not a notebook")
    cm = labserver.ContentsManager(root_dir=str(tmp_path))
    model = asyncio.run(cm.get("labs/a.ipynb"))
    assert model["content"]["metadata"]["language_info"] == labserver.kernel_language_info()
    served = nbformat.from_dict(model["content"])
    stored = nbformat.reads(original, as_version=4)
    served.metadata.pop("language_info"), stored.metadata.pop("language_info")
    for cell in served.cells:
        cell.metadata.pop("trusted", None)          # jupyter_server's trust mark, which JupyterLab never saves
    assert served == stored                         # nothing else changes
    assert (tmp_path / "labs" / "a.ipynb").read_text() == original     # and the file is untouched
    assert asyncio.run(cm.get("labs/notes.txt"))["content"] == "not a notebook"
