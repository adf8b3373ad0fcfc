"""The Jupyter server extension behind ``gpudl formgrader``: nbgrader's formgrader on a grading
output, keeping the grader's promises.

nbgrader's formgrader expects its own workflow: assignments released and collected through an
exchange folder, submissions under ``submitted/``, autograding and feedback by nbgrader itself.
A grading output of ``gpudl grade`` has none of that: labs go out and come back through the LMS,
students are graded in a sandbox, and feedback pages are made safe (``gpudl_instructor.feedback``).
This extension is nbgrader's formgrader (its pages, scripts and API) with these changes:

- submissions are the students the gradebook holds with an autograded notebook in ``OUT``, with
  the time stored by ``gpudl grade``: Manage Assignments shows their count and links to them;
- no exchange is used, so none is missing: no warning; a lab with submissions shows as released;
- **Generate Feedback** (the lab's, or one student's) remakes gpudl's page from the gradebook (manual
  grades and comments included): no hidden test, no traceback of a test cell, no script;
- **Autograde** is refused with the command that grades in the sandbox (``gpudl grade``), and
  Generate (the student version), Release, Collect and Release Feedback with the command or the
  place that does it (``gpudl release``, the LMS, ``gpudl export``);
- a student known by one word shows as "alice", not "alice," (the scripts that join the names).

Public names: ``GpudlAPI`` (nbgrader's API on a grading output), ``remake_feedback`` (one student's
page, replaced only once the new one is made), ``FormgraderExtension`` (loaded by jupyter_server;
``gpudl_instructor.formgrader`` turns nbgrader's own off).
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
import tempfile
from pathlib import Path

from jinja2 import ChoiceLoader, DictLoader, Environment, FileSystemLoader
from nbgrader.api import MissingEntry, SubmittedAssignment
from nbgrader.apps.api import NbGraderAPI
from nbgrader.server_extensions.formgrader import apihandlers, handlers
from nbgrader.server_extensions.formgrader.base import BaseHandler
from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension
from tornado import web

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")   # a lab or student id as gpudl makes them


def _refusal(what: str, instead: str) -> dict:
    return {"success": False, "log": f"{what} is not done here. {instead}", "error": ""}


class GpudlAPI(NbGraderAPI):
    """nbgrader's API on a grading output of ``gpudl grade``: no exchange, submissions from the
    gradebook, feedback through gpudl, grading only through ``gpudl grade``."""

    def __init__(self, coursedir, authenticator, **kwargs):
        # NbGraderAPI's own __init__ lists the exchange (and may create its folder); none is used here.
        super(NbGraderAPI, self).__init__(**kwargs)
        self.log.setLevel(self.log_level)
        self.coursedir, self.authenticator, self.exchange = coursedir, authenticator, None
        self.course_id = coursedir.course_id
        self.exchange_root, self.exchange_missing = "", False

    @property
    def exchange_is_functional(self):
        return False

    @property
    def out(self) -> Path:
        return Path(self.coursedir.root)

    # --- what was submitted: the gradebook's submissions with an autograded notebook ---------

    def get_submitted_students(self, assignment_id):
        with self.gradebook as gb:
            pairs = {(s.student.id, s.assignment.name) for s in gb.db.query(SubmittedAssignment)}
        return {student for student, lab in pairs
                if assignment_id in ("*", lab)
                and os.path.isdir(self.coursedir.format_path(self.coursedir.autograded_directory, student, lab))}

    def get_submitted_timestamp(self, assignment_id, student_id):
        with self.gradebook as gb:
            try:
                return gb.find_submission(assignment_id, student_id).timestamp
            except MissingEntry:
                return None

    def get_assignment(self, assignment_id, released=None):
        assignment = super().get_assignment(assignment_id, released=released)
        if assignment is not None and assignment["num_submissions"]:
            assignment["status"] = "released"          # handed out and collected through the LMS
        return assignment

    # --- what the buttons do -----------------------------------------------------------------

    def generate_feedback(self, assignment_id, student_id=None, force=True):
        submitted = self.get_submitted_students(assignment_id)
        students = [student_id] if student_id is not None else sorted(submitted)
        log, failed = [], []
        for student in students:
            if student not in submitted or not _SAFE_NAME.match(assignment_id):
                failed.append(student)
                log.append(f"{student}: no graded submission of {assignment_id} in {self.out}")
                continue
            try:
                page = remake_feedback(self.out, assignment_id, student)
                log.append(f"{student}: {page.relative_to(self.out)} (gpudl's page: no hidden tests, no scripts)")
            except Exception as exc:  # noqa: BLE001 - reported in the formgrader's dialog, the old page kept
                failed.append(student)
                log.append(f"{student}: the page could not be made ({type(exc).__name__}: {exc}); the old one is kept")
        return {"success": not failed and bool(students), "log": "\n".join(log) or "no graded submissions",
                "error": ""}

    def autograde(self, assignment_id, student_id, force=True, create=True):
        return _refusal("Autograding", f"Student code runs only in gpudl's sandbox: gpudl grade {assignment_id} "
                        f"SUBMISSIONS --out {self.out} grades again (it replaces those students' grades and "
                        "keeps the others').")

    def generate_assignment(self, assignment_id, force=True, create=True):
        return _refusal("Generating the student version", f"gpudl release {assignment_id}, in the course "
                        "repository, makes labs/LAB from solutions/LAB; gpudl grade makes this folder's copy.")

    def release_assignment(self, assignment_id):
        return _refusal("Releasing", "This course hands labs out through the LMS (gpudl handout writes "
                        "the students' folder).")

    def unrelease(self, assignment_id):
        return self.release_assignment(assignment_id)

    def collect(self, assignment_id):
        return _refusal("Collecting", f"Download the submissions from the LMS and run gpudl grade "
                        f"{assignment_id} SUBMISSIONS --out {self.out}.")

    def release_feedback(self, assignment_id, student_id=None):
        return _refusal("Releasing feedback", f"Upload the pages in {self.out / 'feedback'}/STUDENT/{assignment_id}/ "
                        f"to the LMS; gpudl export {self.out} --lms canvas|moodle writes the grades it imports.")


def remake_feedback(out: Path, lab: str, student: str) -> Path:
    """gpudl's feedback page of ``student`` in the grading output ``out``, from its autograded
    notebook and gradebook (manual grades and comments included). It is made in a scratch course
    and replaces ``out/feedback/STUDENT/LAB/LAB.html`` only once made."""
    from . import feedback
    from .course import repo_root

    out = Path(out).resolve()
    notebook = out / "autograded" / student / lab / f"{lab}.ipynb"
    if not notebook.is_file():
        raise FileNotFoundError(f"no autograded notebook {notebook.relative_to(out)}")
    try:
        course_root = str(repo_root(None))
    except FileNotFoundError:
        course_root = ""
    with tempfile.TemporaryDirectory(prefix="gpudl-feedback-") as tmp:
        course = Path(tmp)
        (course / "autograded" / student / lab).mkdir(parents=True)
        shutil.copy(notebook, course / "autograded" / student / lab / notebook.name)
        source, copy = sqlite3.connect(out / "gradebook.db"), sqlite3.connect(course / "gradebook.db")
        try:
            source.backup(copy)           # a consistent copy while the formgrader holds the gradebook open
        finally:
            source.close()
            copy.close()
        page = feedback.generate(course, lab, student, course_root=course_root)
        if page is None:
            raise RuntimeError("nbgrader made no page")
        dest = out / "feedback" / student / lab / f"{lab}.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        staged = dest.with_name(dest.name + ".new")
        shutil.copy(page, staged)
        os.replace(staged, dest)
    return dest


# --- the handlers: nbgrader's, on GpudlAPI ----------------------------------------------------

class _OnGpudlAPI:
    """Mixed into every nbgrader formgrader handler: its ``api`` is ``GpudlAPI``; Manage Assignments
    says what this formgrader does differently."""

    @property
    def api(self):
        self.coursedir.parent.load_config_file()
        api = GpudlAPI(self.coursedir, self.authenticator, parent=self.coursedir.parent)
        api.log_level = self.log.level
        return api

    def render(self, name, **ns):
        if name == "manage_assignments.tpl":
            name, ns = "gpudl_manage_assignments.tpl", dict(ns, out=self.coursedir.root)
        return super().render(name, **ns)


_NOTE = """{%- extends 'manage_assignments.tpl' -%}
{%- block messages -%}
<div class="alert alert-info" id="gpudl-note">
<b>gpudl.</b> This course hands labs out and collects them through the LMS: no exchange, so no
Release or Collect. <b>Autograde</b> runs student code only in gpudl's sandbox:
<code>gpudl grade LAB SUBMISSIONS --out {{ out }}</code>. <b>Generate Feedback</b> makes gpudl's pages
(no hidden tests, no scripts) from this gradebook, your manual grades and comments included, in
<code>feedback/STUDENT/LAB/</code>; give them to students through the LMS, where
<code>gpudl export {{ out }} --lms canvas</code> (or <code>moodle</code>) sends the grades.
</div>
{{ super() }}
{%- endblock -%}
"""

# The scripts that show a student's name join "last, first"; one-word ids have no first name.
_NAME_FIXES = {
    "manage_submissions.js": ('var name = last_name + ", " + first_name;',
                              'var name = [last_name, first_name].filter(function (part) { return part && '
                              'part !== "None"; }).join(", ") || this.model.get("student");'),
    "manage_students.js": ('var name = last_name + ", " + first_name;',
                           'var name = [last_name, first_name].filter(function (part) { return part && '
                           'part !== "None"; }).join(", ") || this.model.get("id");'),
    "gradebook_notebook_submissions.js": ('name = last_name + ", " + first_name',
                                          'name = [last_name, first_name].filter(Boolean).join(", ") || name'),
}


class NamesScript(web.RequestHandler):
    """One of nbgrader's formgrader scripts, with its names joined without an empty part."""

    def get(self, name: str) -> None:
        text = (Path(handlers.static_path) / "js" / name).read_text()
        old, new = _NAME_FIXES[name]
        if old not in text:
            logging.getLogger(__name__).warning("nbgrader's %s no longer joins names as gpudl expects: served "
                                                "unchanged", name)
        self.set_header("Content-Type", "application/javascript; charset=UTF-8")
        self.write(text.replace(old, new))


def _on_gpudl_api(rule: tuple) -> tuple:
    cls = rule[1]
    if isinstance(cls, type) and issubclass(cls, BaseHandler) and not issubclass(cls, web.StaticFileHandler):
        cls = type(cls.__name__, (_OnGpudlAPI, cls), {"__module__": __name__})
    return (rule[0], cls, *rule[2:])


class FormgraderExtension(FormgradeExtension):
    """nbgrader's formgrader extension with gpudl's handlers first and its own Manage Assignments note."""

    def init_tornado_settings(self, webapp):
        super().init_tornado_settings(webapp)
        webapp.settings["nbgrader_jinja2_env"] = Environment(loader=ChoiceLoader([
            DictLoader({"gpudl_manage_assignments.tpl": _NOTE}), FileSystemLoader([handlers.template_path])]))

    def init_handlers(self, webapp):
        from jupyter_server.utils import url_path_join

        scripts = "|".join(re.escape(name) for name in _NAME_FIXES)
        rules = [(rf"/formgrader/static/js/({scripts})", NamesScript)]
        rules += [_on_gpudl_api(rule) for rule in (*handlers.default_handlers, *apihandlers.default_handlers)]
        rules += [(r"/formgrader/static/(.*)", web.StaticFileHandler, {"path": handlers.static_path}),
                  (r"/formgrader/.*", handlers.Template404)]
        base = webapp.settings["base_url"]
        webapp.add_handlers(".*$", [(url_path_join(base, rule[0].lstrip("/")), *rule[1:]) for rule in rules])


def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(server_app):
    """Load gpudl's formgrader (jupyter_server calls this; nbgrader's own is turned off)."""
    server_app.log.info("Loading gpudl's formgrader (nbgrader's, on a grading output of gpudl grade)")
    formgrader = FormgraderExtension(parent=server_app)
    formgrader.root_dir = server_app.root_dir
    formgrader.log = server_app.log
    formgrader.initialize([])
    formgrader.init_tornado_settings(server_app.web_app)
    formgrader.init_handlers(server_app.web_app)
