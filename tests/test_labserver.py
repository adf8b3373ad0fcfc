"""What `gpudl lab` and `gpudl formgrader` start, checked without starting them (test_jupyterlab and
test_browser start them)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gpudl import labserver, pipeline

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
    assert f"--ServerApp.root_dir={ROOT}" in cmd and "--ServerApp.default_url=/lab/tree/labs" in cmd
    assert "--ServerApp.contents_manager_class=gpudl.labserver.ContentsManager" in cmd
    assert {"--port=8999", "--no-browser", "--IdentityProvider.token=t", "--x=1"} <= set(cmd)
    assert env["JUPYTER_CONFIG_PATH"] == f"{tmp_path}{os.pathsep}/somewhere/else"
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)


def test_the_kernel_language_info_is_what_ipykernel_reports():
    from ipykernel.ipkernel import IPythonKernel
    info = labserver.kernel_language_info()
    assert info == IPythonKernel.language_info and info["name"] == "python" and info["version"]


def test_names_from_ids():
    assert labserver.split_name("ada-lovelace") == ("ada", "lovelace")
    assert labserver.split_name("Grace_Brewster_Hopper") == ("Grace Brewster", "Hopper")
    assert labserver.split_name("alice") == ("", "alice")
