"""nbgrader's formgrader on a grading output of ``gpudl grade``: ``gpudl formgrader OUT``.

The server runs ``gpudl_instructor.formgrader_extension`` in place of nbgrader's formgrader: the
same pages, with the lab's real submissions, no exchange, feedback made by gpudl and autograding
left to ``gpudl grade`` (its docstring says what changes and why).

Public names: ``name_students`` (first and last names for students the gradebook knows only by
id), ``formgrader_command`` (``jupyter lab`` on a grading output, opening the formgrader),
``serve_formgrader`` (what ``gpudl formgrader OUT`` does).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from gpudl.labserver import _env, _server_args, serve


def name_students(gradebook: Path) -> list[str]:
    """Give every student of ``gradebook`` with neither a first nor a last name one made from the id
    (the formgrader shows "None, None" otherwise); returns the ids it named. Names set by hand, in
    the formgrader's Manage Students page or by the grader, are kept."""
    from nbgrader.api import Gradebook

    from .nbgrader_setup import COURSE_ID
    from .submissions import split_name

    named = []
    with Gradebook(f"sqlite:///{Path(gradebook).resolve()}", course_id=COURSE_ID) as gb:
        for student in gb.students:
            if student.first_name is None and student.last_name is None:
                first, last = split_name(student.id)
                gb.update_or_create_student(student.id, first_name=first, last_name=last)
                named.append(student.id)
    return named


def formgrader_command(out: Path, *, port: int | None = None, no_browser: bool = False,
                       token: str | None = None, extra: list[str] = ()) -> tuple[list[str], dict[str, str]]:
    """``jupyter lab`` in a grading output ``OUT`` of ``gpudl grade``, opening nbgrader's formgrader.

    OUT holds the gradebook, the autograded notebooks and an nbgrader_config.py naming OUT as the
    course root; the formgrader reads that config from the folder the server starts in.
    """
    out = Path(out).resolve()
    if not (out / "gradebook.db").is_file() or not (out / "nbgrader_config.py").is_file():
        raise FileNotFoundError(f"{out} is not a grading output (no gradebook.db and nbgrader_config.py there): "
                                "run gpudl grade LAB SUBMISSIONS --out OUT first")
    # JupyterLab reads LabApp.default_url (ServerApp's is ignored): the instructor lands on the formgrader.
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={out}", "--LabApp.default_url=/formgrader",
           *_server_args(port, no_browser, token), *extra]
    return cmd, _env(_write_config(out / ".gpudl-jupyter"))


INSTRUCTOR_LAB_OFF = ("@jupyterlab/apputils-extension:announcements",)   # "get notified about Jupyter news?"


# nbgrader's formgrader off, gpudl's on (see gpudl_instructor.formgrader_extension).
INSTRUCTOR_SERVER = {"nbgrader.server_extensions.formgrader": False,
                     "gpudl_instructor.formgrader_extension": True}


def _write_config(dest: Path) -> Path:
    """A Jupyter config folder (first on JUPYTER_CONFIG_PATH): JupyterLab without its news pop-up,
    the server with gpudl's formgrader instead of nbgrader's."""
    (dest / "labconfig").mkdir(parents=True, exist_ok=True)
    (dest / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {name: True for name in INSTRUCTOR_LAB_OFF}}, indent=1) + "\n")
    (dest / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": INSTRUCTOR_SERVER}}, indent=1) + "\n")
    return dest


def serve_formgrader(out: Path, *, port: int | None = None, no_browser: bool = False, token: str | None = None,
                     extra: list[str] = ()) -> int:
    """Serve nbgrader's formgrader on the grading output ``out`` until stopped."""
    cmd, env = formgrader_command(out, port=port, no_browser=no_browser, token=token, extra=extra)
    named = name_students(Path(out) / "gradebook.db")
    if named:
        print(f"named {len(named)} student(s) after their ids (first-last); edit names in Manage Students")
    return serve(cmd, Path(out).resolve(), env)
