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


def test_students_get_gpudls_validate_and_none_of_nbgraders_panels(tmp_path):
    config = labserver.write_config(tmp_path / "cfg")
    disabled = json.loads((config / "labconfig" / "page_config.json").read_text())["disabledExtensions"]
    for plugin in NBGRADER_PLUGINS:          # nbgrader's Validate is on every notebook: gpudl's replaces it
        assert disabled.get(f"@jupyter/nbgrader:{plugin}") is True, plugin
    server = json.loads((config / "jupyter_server_config.json").read_text())["ServerApp"]["jpserver_extensions"]
    assert server == {"gpudl.labserver": True,
                      "nbgrader.server_extensions.validate_assignment": False,
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


# --- Validate: on labs only, its answer led by a summary line ---------------------------------------

def _graded_notebook(cells):
    """A notebook of (kind, source, grade_id, points) cells with nbgrader's metadata, as a release has it."""
    import nbformat
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    for kind, source, grade_id, points in cells:
        make = nbformat.v4.new_markdown_cell if kind == "answer" else nbformat.v4.new_code_cell
        meta = {"grade": kind in ("test", "answer"), "solution": kind in ("solution", "answer"),
                "locked": kind == "test", "grade_id": grade_id, "schema_version": 3}
        if points is not None:
            meta["points"] = points
        nb.cells.append(make(source, metadata={"nbgrader": meta}))
    return nb


def _output(cell, *outputs):
    import nbformat
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return cell


def test_the_summary_counts_tests_and_points_as_nbgrader_grades_them():
    nb = _graded_notebook([("solution", "def f(): return 1", "f", None),
                           ("test", "check(f)", "test_f", 4),
                           ("test", "check(g)", "test_g", 3),
                           ("test", "check(h)", "test_h", 2),
                           ("answer", "Explain why.", "why", 5)])
    _output(nb.cells[1], {"output_type": "error", "ename": "AssertionError", "evalue": "off by 2", "traceback": []})
    _output(nb.cells[2], {"output_type": "stream", "name": "stderr", "text": "a warning\n"})   # nbgrader: a failure
    _output(nb.cells[3], {"output_type": "stream", "name": "stdout", "text": "fine\n"})
    s = labserver.summary(nb)
    assert (s["tests"], s["passed"], s["points"], s["max_points"], s["manual_points"]) == (3, 1, 2, 9, 5)
    assert s["line"] == "1 of 3 tests pass (2 of 9 points); 5 more points are graded by hand"
    for cell in nb.cells[1:3]:
        cell.outputs = []
    assert labserver.summary(nb)["line"] == "3 of 3 tests pass (9 of 9 points); 5 more points are graded by hand"
    one = _graded_notebook([("test", "check(f)", "test_f", 1.5)])
    assert labserver.summary(one)["line"] == "1 of 1 test pass (1.5 of 1.5 points)"


def test_labs_have_graded_cells_and_lectures_none():
    import nbformat
    labs = sorted(ROOT.glob("labs/*/*.ipynb"))
    lectures = sorted(ROOT.glob("course/*.ipynb"))
    assert labs and lectures
    for path in labs:
        assert labserver.is_lab(nbformat.read(str(path), as_version=4)), path.name
        assert labserver.is_lab(json.loads(path.read_text())), path.name          # the JSON, as the browser has it
    for path in [*lectures, ROOT / "START.ipynb"]:
        assert not labserver.is_lab(nbformat.read(str(path), as_version=4)), path.name


def test_validate_answers_a_lecture_without_running_it(tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A lecture"), nbformat.v4.new_code_cell("raise SystemExit(3)")]
    path = tmp_path / "lecture.ipynb"
    nbformat.write(nb, str(path))
    assert labserver.validate(path) == {"lecture": True}


def test_validate_runs_a_lab_and_leads_with_the_summary(tmp_path):
    import nbformat
    nb = _graded_notebook([("solution", "def f(x):\n    return 2 * x", "f", None),
                           ("test", "assert f(2) == 4", "test_f", 3),
                           ("test", "assert f(3) == 7, 'f(3) should be 7: did you add 1?'", "test_f_plus", 2),
                           ("test", "import sys; print('noise', file=sys.stderr)", "test_quiet", 1)])
    path = tmp_path / "lab.ipynb"
    nbformat.write(nb, str(path))
    result = labserver.validate(path)
    assert result["summary"]["line"] == "1 of 3 tests pass (3 of 6 points)"
    failed = {f["grade_id"]: f for f in result["failed"]}
    assert sorted(failed) == ["test_f_plus", "test_quiet"]
    assert (failed["test_f_plus"]["points"], failed["test_f_plus"]["max_points"]) == (0, 2)
    assert "did you add 1?" in failed["test_f_plus"]["raw_error"]
    assert failed["test_quiet"]["source"] == nb.cells[3].source


def test_gpudls_lab_extension_is_a_federated_extension_jupyterlab_finds(tmp_path):
    from jupyterlab_server.config import get_federated_extensions
    found = get_federated_extensions([str(labserver.LABEXTENSIONS)])
    assert list(found) == ["gpudl"]
    build = found["gpudl"]["jupyterlab"]["_build"]
    script = labserver.LABEXTENSIONS / "gpudl" / build["load"]
    text = script.read_text()
    assert build["extension"] == "./extension" and "window._JUPYTERLAB.gpudl" in text
    assert '"gpudl:validate"' in text and '"assignments/validate"' in text
    cmd, _ = labserver.lab_command(ROOT, tmp_path)
    assert f"--LabApp.extra_labextensions_path={labserver.LABEXTENSIONS}" in cmd


def test_the_student_readme_says_how_to_choose_the_port_and_token_without_a_browser(monkeypatch):
    """The README's command for a shared server reaches ``serve_lab`` as written, and the address it
    tells students to open has that port and token."""
    import re
    import shlex

    from gpudl import cli

    readme = (ROOT / "student" / "README.md").read_text()
    args = shlex.split(re.search(r'make lab LAB_ARGS="([^"]+)"', readme).group(1))
    assert re.search(r"gpudl lab " + re.escape(" ".join(args)), readme), "the command without make says the same"
    seen = {}
    monkeypatch.setattr(labserver, "serve_lab", lambda **kw: seen.update(kw) or 0)
    assert cli.main(["lab", *args]) == 0
    assert seen["no_browser"] is True and seen["port"] and seen["token"]
    assert f"http://localhost:{seen['port']}/lab?token={seen['token']}" in readme
    cmd, _ = labserver.lab_command(ROOT, ROOT, port=seen["port"], no_browser=True, token=seen["token"])
    assert f"--port={seen['port']}" in cmd and f"--IdentityProvider.token={seen['token']}" in cmd
