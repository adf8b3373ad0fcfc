"""The JupyterLab server students open: ``gpudl lab``.

``gpudl lab`` serves the course root (``course_root``: the repository or a student
hand-out, the folder holding ``labs/`` and ``course/``), so that a lab's link to its lecture, ``../../course/NN_topic.ipynb``,
opens with a click, and opens on ``START.ipynb``, the units in order. Students get a Validate button
on lab notebooks and none of nbgrader's instructor panels: formgrader, the Create Assignment sidebar
(which lets anyone change a cell's grading metadata), and the course and assignment lists (which need
an exchange this course does not use). The instructor's formgrader is ``gpudl_instructor.formgrader``.

Validate is gpudl's: nbgrader's Validator runs the notebook as before, but the button comes from
gpudl's own small lab extension (``labextension/gpudl``, plain JavaScript with no build step,
served with ``--LabApp.extra_labextensions_path``), which shows it only on a notebook with graded
cells (a lab, not a lecture), and the answer, from this module's server extension, begins with a
summary: "7 of 9 tests pass (24 of 32 points)". nbgrader's own button can do neither: it sits on
every notebook and its dialog lists failed cells without a count.

Public names, in reading order:

``STUDENT_LAB_OFF``    the lab extensions (front-end plugins) students do not get
``STUDENT_SERVER``     which server extensions students get (gpudl's Validate, none of nbgrader's)
``LABEXTENSIONS``      the folder holding gpudl's lab extension
``write_config``       a Jupyter config folder with those settings (put first on JUPYTER_CONFIG_PATH)
``is_lab``             whether a notebook has graded cells, so that Validate has something to check
``summary``            the counts of an executed notebook's tests and points, and the line that says them
``validate``           what Validate answers for a notebook (nbgrader's result with the summary first)
``ContentsManager``    hands notebooks out with the running kernel's ``language_info``, so opening one
                       does not mark it modified
``lab_command``        the ``jupyter lab`` command line and environment for students
``serve_lab``          what ``gpudl lab`` does: the config, the command, the server until it stops
``course_root``        the folder holding ``labs/``: the repository or a hand-out
``serve``              run a Jupyter server until it stops, kernels shut down
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# nbgrader 0.9.6 ships these plugins in its lab extension (@jupyter/nbgrader). "menu" is the
# Nbgrader menu, whose entries open the other three panels.
STUDENT_LAB_OFF = (
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:assignment-list",
    "@jupyter/nbgrader:menu",
    "@jupyter/nbgrader:validate-assignment",           # on every notebook: gpudl's Validate replaces it
    "@jupyterlab/apputils-extension:announcements",    # "get notified about Jupyter news?" on first start
)
DEFAULT_CELL_TIMEOUT = 180          # seconds per cell (a GPU lab on a cold machine compiles kernels)
STUDENT_SERVER = {
    "gpudl.labserver": True,                              # Validate's server side: see _load_jupyter_server_extension
    "nbgrader.server_extensions.validate_assignment": False,
    "nbgrader.server_extensions.formgrader": False,       # would open a gradebook.db where it runs
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.assignment_list": False,
}
LABEXTENSIONS = Path(__file__).resolve().parent / "labextension"     # holds gpudl/package.json and its script


def write_config(dest: Path) -> Path:
    """Write gpudl's Jupyter configuration for students into ``dest`` and return it.

    JupyterLab reads ``labconfig/page_config.json`` (disabled plugins) and ``jupyter_server_config.json``
    (server extensions) from every folder on JUPYTER_CONFIG_PATH, the first with the highest priority;
    nbgrader's Validate reads ``nbgrader_config.json`` from the same folders.
    """

    (dest / "labconfig").mkdir(parents=True, exist_ok=True)
    # Validate runs the whole notebook with nbgrader's executor: a cell gets the time `gpudl grade`
    # gives it (a Triton kernel in the CPU interpreter takes tens of seconds; nbgrader's default is 30 s).
    files = {
        dest / "labconfig" / "page_config.json": {"disabledExtensions": {name: True for name in STUDENT_LAB_OFF}},
        dest / "jupyter_server_config.json": {"ServerApp": {"jpserver_extensions": STUDENT_SERVER}},
        dest / "nbgrader_config.json": {"Execute": {"timeout": DEFAULT_CELL_TIMEOUT, "startup_timeout": 120,
                                                    "interrupt_on_timeout": True}},
    }
    for path, data in files.items():
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return dest


def _graded(cell) -> bool:
    return bool((cell.get("metadata") or {}).get("nbgrader", {}).get("grade"))


def is_lab(nb) -> bool:
    """Whether the notebook ``nb`` (nbformat's node or its JSON as a dict) has a graded cell: a lab has
    its test cells, a lecture none, and Validate has nothing to check in a lecture."""
    return any(_graded(cell) for cell in nb.get("cells", ()))


def summary(nb) -> dict:
    """Count the tests of an executed notebook ``nb`` the way nbgrader grades them: a test cell (an
    autograded code cell with points) passes when it earns all its points. Answers graded by hand
    are counted apart, as their points are not known until then.

    Returns ``{"tests", "passed", "points", "max_points", "manual_points", "line"}``, the line reading
    "7 of 9 tests pass (24 of 32 points)".
    """
    from nbgrader.utils import determine_grade, is_solution

    tests = passed = manual = 0
    points = max_points = 0.0
    for cell in nb.cells:
        if not _graded(cell):
            continue
        if cell.cell_type != "code" or is_solution(cell):
            manual += float(cell.metadata.nbgrader.get("points") or 0)
            continue
        score, most = determine_grade(cell)
        tests += 1
        passed += score == most
        points, max_points = points + score, max_points + most
    line = f"{passed} of {tests} test{'s' if tests != 1 else ''} pass ({points:g} of {max_points:g} points)"
    if manual:
        line += f"; {manual:g} more points are graded by hand"
    return {"tests": tests, "passed": int(passed), "points": points, "max_points": max_points,
            "manual_points": manual, "line": line}


def validate(path: Path, config=None) -> dict:
    """What Validate answers for the notebook at ``path``: nbgrader's result (``failed``, ``changed``
    or ``type_changed``, each failed cell with its ``grade_id`` and points) with ``summary`` added;
    for a notebook without graded cells, ``{"lecture": True}`` without running it."""
    import nbformat
    from nbgrader.utils import determine_grade
    from nbgrader.validator import Validator

    if not is_lab(nbformat.read(str(path), as_version=4)):
        return {"lecture": True}

    class SummingValidator(Validator):
        executed = None
        failed_cells = ()

        def _preprocess(self, nb):
            self.executed = super()._preprocess(nb)
            return self.executed

        def _get_failed_cells(self, nb):
            self.failed_cells = super()._get_failed_cells(nb)
            return self.failed_cells

    validator = SummingValidator(config=config)
    result = validator.validate(str(path))
    if validator.executed is not None:          # type_changed: nbgrader stops before running anything
        result["summary"] = summary(validator.executed)
    for entry, cell in zip(result.get("failed", ()), validator.failed_cells):
        entry["grade_id"] = cell.metadata.nbgrader.get("grade_id", "")
        if _graded(cell):
            entry["points"], entry["max_points"] = determine_grade(cell)
    return result


def _validate_handler() -> type:
    from nbgrader.nbgraderformat import SchemaTooNewError, SchemaTooOldError
    from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler
    from tornado import web

    class ValidateHandler(ValidateAssignmentHandler):
        """nbgrader's handler (POST path=...) answering with ``validate``'s result."""

        def load_config(self):
            """nbgrader's settings from the Jupyter config path (gpudl's folder first), never from the
            served folder as nbgrader's handler does: the repository's nbgrader_config.py is the
            instructor's and a hand-out has none, so Validate runs the same in both."""
            from nbgrader.apps import NbGrader
            app = NbGrader()
            app.load_cwd_config = False
            app.load_config_file()
            return app.config

        def validate_notebook(self, path):
            root = Path(self.root_dir).resolve()
            target = (root / path).resolve()
            if not target.is_relative_to(root):
                raise web.HTTPError(403, "Access denied: path outside allowed directory")
            try:
                return {"success": True, "value": validate(target, self.load_config())}
            except (SchemaTooOldError, SchemaTooNewError):
                return super().validate_notebook(path)      # nbgrader's message says how to update
            except (Exception, SystemExit):  # noqa: BLE001 - the dialog says what went wrong, as nbgrader's does
                import traceback
                self.log.error(traceback.format_exc())
                return {"success": False, "value": traceback.format_exc()}

    ValidateHandler.__module__, ValidateHandler.__qualname__ = __name__, "ValidateHandler"
    return ValidateHandler


def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Serve Validate at nbgrader's address (``/assignments/validate``, and ``/nbgrader_version``)
    with gpudl's handler, in place of nbgrader's validate_assignment server extension."""
    from jupyter_server.utils import url_path_join
    from nbgrader.server_extensions.validate_assignment.handlers import NbGraderVersionHandler

    web_app = serverapp.web_app
    web_app.settings["root_dir"] = serverapp.root_dir
    base = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [(url_path_join(base, "assignments/validate"), _validate_handler()),
                                 (url_path_join(base, "nbgrader_version"), NbGraderVersionHandler)])


def kernel_language_info() -> dict:
    """What the python3 kernel of this environment reports as its language (ipykernel's dict)."""
    from ipykernel.ipkernel import IPythonKernel
    return json.loads(json.dumps(IPythonKernel.language_info))


def _contents_manager() -> type:
    from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

    class ContentsManager(AsyncLargeFileManager):
        """jupyter_server's file contents manager, with one change for notebooks it hands out.

        JupyterLab replaces a notebook's ``metadata.language_info`` with the kernel's as soon as the
        kernel starts, and any difference marks the notebook modified. The course's notebooks store
        only ``{"name": "python"}`` (the kernel's full answer names the Python version, which differs
        from machine to machine and would make every release depend on who made it). Handing the
        notebook out with this environment's answer makes that replacement a no-op: a notebook opens
        unmodified, and saving writes what JupyterLab would have written anyway.
        """

        async def get(self, path, content=True, type=None, format=None, **kwargs):  # noqa: A002 - jupyter's names
            model = await super().get(path, content=content, type=type, format=format, **kwargs)
            if content and model.get("type") == "notebook" and model.get("content") is not None:
                meta = model["content"].setdefault("metadata", {})
                language = (meta.get("kernelspec") or {}).get("language", "python")
                if language == "python" and (meta.get("language_info") or {}).get("name", "python") == "python":
                    meta["language_info"] = kernel_language_info()
            return model

    ContentsManager.__module__, ContentsManager.__qualname__ = __name__, "ContentsManager"
    return ContentsManager


def __getattr__(name: str):
    # ContentsManager is made on first use, so that this module imports without a Jupyter server
    # installed (doctor, the GPU runners); jupyter_server finds it by name.
    if name == "ContentsManager":
        globals()[name] = _contents_manager()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _env(config: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    # alembic and jupyter next to this interpreter, whatever PATH says (nbgrader needs alembic).
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    if config is not None:
        env["JUPYTER_CONFIG_PATH"] = str(config) + (os.pathsep + env["JUPYTER_CONFIG_PATH"]
                                                    if env.get("JUPYTER_CONFIG_PATH") else "")
    return env


def _server_args(port: int | None, no_browser: bool, token: str | None) -> list[str]:
    args = []
    if port:
        args.append(f"--port={port}")
    if no_browser:
        args.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")      # containers and CI runners often run as root
    if token is not None:
        args.append(f"--IdentityProvider.token={token}")
    return args


def lab_command(root: Path, config: Path, *, port: int | None = None, no_browser: bool = False,
                token: str | None = None, extra: list[str] = ()) -> tuple[list[str], dict[str, str]]:
    """``jupyter lab`` on ``root`` for students, with the config folder ``config`` (see write_config)."""
    start = "START.ipynb" if (Path(root) / "START.ipynb").is_file() else "labs"
    # JupyterLab reads LabApp.default_url (ServerApp's is ignored): students land on the start page.
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}",
           f"--LabApp.default_url=/lab/tree/{start}", f"--LabApp.extra_labextensions_path={LABEXTENSIONS}",
           f"--ServerApp.contents_manager_class={__name__}.ContentsManager",
           *_server_args(port, no_browser, token), *extra]
    env = _env(config)
    from .hardware import device
    if device() == "cpu":
        # Kernels inherit this: Triton runs in its interpreter even if a notebook imports triton before gpudl.
        env.setdefault("TRITON_INTERPRET", "1")
        env.setdefault("NUMBA_ENABLE_CUDASIM", "1")      # the same for numba-cuda's simulator (unit 04)
    return cmd, env


def serve_lab(root: Path | None = None, *, port: int | None = None, no_browser: bool = False,
              token: str | None = None, extra: list[str] = ()) -> int:
    """Serve the course root (default: the one around the current folder) to a student until stopped."""
    root = Path(root) if root else course_root()
    with tempfile.TemporaryDirectory(prefix="gpudl-lab-config-") as config:
        cmd, env = lab_command(root, write_config(Path(config)), port=port, no_browser=no_browser, token=token,
                               extra=extra)
        return serve(cmd, root, env)


def serve(cmd: list[str], cwd: Path, env: dict[str, str]) -> int:
    """Run a Jupyter server until it stops. Ctrl-C reaches the server from the terminal (it asks to
    confirm); SIGTERM is passed on; either way the server shuts its kernels down before we return."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env)
    previous = signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


def course_root(start: str | Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the current one) that holds ``labs/``;
    else the folder around this package's source (a hand-out installed with ``pip install -e``)."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / "labs").is_dir() and any((d / "labs").glob("*/*.ipynb")):
            return d
    around = Path(__file__).resolve().parents[2]
    if (around / "labs").is_dir():
        return around
    raise FileNotFoundError(f"no labs/ folder at or above {here}: run gpudl lab in the course repository "
                            "or in the hand-out your instructor gave you")
