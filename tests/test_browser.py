"""A student's first minutes, in a real browser.

Playwright for Python drives the system's Chromium (Debian's package: Playwright's own browser
download is not used) against `gpudl lab` serving a fresh hand-out on a free port with a token:
the lab opens unmodified with Validate and without nbgrader's instructor panels; the setup cell
runs; a wrong answer gets its teaching message; Validate's dialog gives the verdict; the "Read
first" link opens the lecture notebook; no gradebook appears. Screenshots go to test-artifacts/.

Without Playwright or a Chromium the test skips and says what to install (`make system-deps`).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from conftest import stop_process_group

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
LAB = "lab01_performance_basics"
WRONG = ROOT / "tests" / "mutants" / LAB / "peak_flops_from_units__no_factor_2.py"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]   # one JupyterLab server for the module

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


def find_chromium() -> str | None:
    """$GPUDL_CHROMIUM, else the first of BROWSERS on PATH."""
    if os.environ.get("GPUDL_CHROMIUM"):
        return os.environ["GPUDL_CHROMIUM"]
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def teaching_message(source: str) -> str:
    """The last line of what the check says about ``source``, run here in-process: the line the
    student must see in the notebook and in Validate."""
    from gpudl.grading import lab01

    ns: dict = {}
    exec(source, ns)     # noqa: S102 - the project's own mutant
    try:
        lab01.peak_flops_from_units(ns["peak_flops_from_units"])
    except AssertionError as exc:
        return [line for line in str(exc).splitlines() if line.strip()][-1].strip()
    raise AssertionError(f"{WRONG.name} passes the visible check: pick another wrong answer for this test")


@pytest.fixture(scope="module")
def chromium():
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is missing: `make setup` installs "
                                                      "the dev dependencies (pip install -e '.[dev]')")
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine: `make system-deps` installs Debian's as root "
                    "(apt-get install chromium), or set GPUDL_CHROMIUM to a Chromium or Chrome executable")
    return exe


@pytest.fixture(scope="module")
def served(tmp_path_factory, chromium):
    """A fresh hand-out, served by `gpudl lab` headless on a free port with a token."""
    tmp = tmp_path_factory.mktemp("browser")
    handout = tmp / "gpudl-labs"
    # Written without the answer hunt: what the browser sees is the same, and the hunt (tens of minutes on
    # a cold cache) is test_handout's and test_hunt's to run.
    write = f"from gpudl_instructor.handout import handout; handout({str(handout)!r}, {str(ROOT)!r}, hunt=False)"
    res = subprocess.run([sys.executable, "-c", write], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    port, token = free_port(), "gpudl-browser-token"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp / "runtime"))
    env.pop("MPLBACKEND", None)           # the tests' Agg would keep the kernel from drawing inline
    cmd = [sys.executable, "-m", "gpudl", "lab", "--no-browser", f"--port={port}", f"--token={token}",
           "--ServerApp.ip=127.0.0.1", f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
           f"--LabApp.user_settings_dir={tmp / 'settings'}", "--LabApp.expose_app_in_browser=True"]
    log = open(tmp / "server.log", "w")
    proc = subprocess.Popen(cmd, cwd=handout, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"gpudl lab did not start:\n{(tmp / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        yield base, token, handout, tmp
    finally:
        stop_process_group(proc)
        log.close()


def _cells(path: Path) -> dict[str, int]:
    """Index of each cell in the notebook, by grade id; the first cell is 'intro'."""
    nb = nbformat.read(str(path), as_version=4)
    out = {"intro": 0}
    for i, cell in enumerate(nb.cells):
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid:
            out[gid] = i
    return out


KERNEL_READY = """() => {
    const w = window.jupyterapp.shell.currentWidget;
    const kernel = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return kernel && w.sessionContext.isReady && kernel.connectionStatus === "connected" && kernel.status === "idle"
        && (w.context.model.getMetadata("language_info") || {}).version !== undefined;
}"""


def run(page, cell, tries: int = 3) -> None:
    """Select ``cell`` and press Shift+Enter, as a student does; again if the kernel did not take it
    (its prompt still reads [ ] a few seconds later)."""
    from playwright.sync_api import expect

    prompt = cell.locator(".jp-InputPrompt")
    for attempt in range(tries):
        page.wait_for_function(KERNEL_READY)
        prompt.click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(prompt).not_to_have_text(re.compile(r"^\[\s*\]:$"), timeout=15_000)
            return
        except AssertionError:
            if attempt == tries - 1:
                raise


def patient_expect() -> None:
    """Make Playwright's ``expect`` wait up to 60 s. Its default is 5 s, whatever the page's timeout:
    on a 2-core CI machine grading a class beside the browser, JupyterLab took longer than that to
    open a notebook (START.ipynb; a lab, when this test ran first; November 2026)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)


@contextlib.contextmanager
def lab_page(chromium: str, profile: Path):
    """A page of a headless Chromium (its profile kept in ``profile``), patient as a busy machine needs."""
    from playwright.sync_api import sync_playwright

    patient_expect()
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(str(profile), executable_path=chromium, headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1400, "height": 1000})
        try:
            page = context.new_page()
            page.set_default_timeout(120_000)
            yield page
        finally:
            context.close()


def test_a_student_opens_a_lab_runs_a_wrong_answer_validates_and_opens_the_lecture(served, chromium):
    from playwright.sync_api import expect

    base, token, handout, tmp = served
    nb_path = f"labs/{LAB}/{LAB}.ipynb"
    cells = _cells(handout / nb_path)
    wrong = "\n".join(line for line in WRONG.read_text().splitlines() if not line.startswith("# "))
    message = teaching_message(wrong)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "browser-failure.png").unlink(missing_ok=True)     # from an earlier run

    with lab_page(chromium, tmp / "chromium-profile") as page:
        try:
            page.goto(f"{base}/lab/tree/{nb_path}?token={token}")
            panel = page.locator(".jp-NotebookPanel:visible")
            expect(panel).to_have_count(1)
            notebook = panel.locator(".jp-Notebook")
            # The kernel is up once it is connected and idle, and JupyterLab has its language_info.
            page.wait_for_function(KERNEL_READY)
            page.wait_for_timeout(1000)

            # Opened, not modified: the tab shows no dirty mark.
            assert page.evaluate("() => window.jupyterapp.shell.currentWidget.context.model.dirty") is False, \
                "the notebook shows as modified as soon as it is opened"
            expect(page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current.jp-mod-dirty")).to_have_count(0)

            # Validate is there; nbgrader's instructor panels are not.
            expect(panel.locator(".jp-Toolbar").get_by_text("Validate", exact=True)).to_be_visible()
            expect(page.locator("#jp-menu-panel")).not_to_contain_text("Nbgrader")
            expect(page.locator(".jp-SideBar.jp-mod-right")).not_to_contain_text("Create Assignment")
            expect(page.locator(".jp-Dialog")).to_have_count(0)
            commands = page.evaluate("() => window.jupyterapp.commands.listCommands().filter(c => c.startsWith('nbgrader:'))")
            assert commands == [] or set(commands) <= {"nbgrader:validate"}, commands

            # The setup cell runs.
            cell = notebook.locator(".jp-Cell").nth(cells["setup"])
            run(page, cell)
            expect(cell.locator(".jp-OutputArea")).to_contain_text("running on", timeout=180_000)

            # A wrong answer: its test cell shows the teaching message.
            cell = notebook.locator(".jp-Cell").nth(cells["peak_flops_from_units"])
            cell.locator(".cm-content").click()
            page.keyboard.press("Control+A")
            page.keyboard.insert_text(wrong)
            page.keyboard.press("Escape")
            run(page, cell)
            test_cell = notebook.locator(".jp-Cell").nth(cells["test_peak_flops_from_units"])
            run(page, test_cell)
            expect(test_cell.locator(".jp-OutputArea")).to_contain_text(message, timeout=120_000)
            test_cell.scroll_into_view_if_needed()
            page.screenshot(path=ARTIFACTS / "lab-teaching-message.png")

            # Validate saves and runs the whole notebook; its dialog gives the verdict.
            panel.locator(".jp-Toolbar").get_by_text("Validate", exact=True).click()
            dialog = page.locator(".jp-Dialog")
            expect(dialog).to_contain_text("Validation Results", timeout=300_000)
            verdict = dialog.locator("#validation-message")
            expect(verdict).to_have_class(re.compile(r"\bvalidation-failed\b"))
            expect(verdict).to_contain_text("The following cell failed:")
            expect(verdict).to_contain_text(message)
            page.screenshot(path=ARTIFACTS / "validate-dialog.png")
            dialog.get_by_role("button", name="Ok").click()
            expect(dialog).to_have_count(0)

            # The first cell's "Read first" link opens the lecture notebook in the same JupyterLab.
            intro = notebook.locator(".jp-Cell").nth(cells["intro"])
            intro.locator("a[href*='/course/01_performance_basics.ipynb']").first.click()
            current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")
            expect(current).to_contain_text("01_performance_basics.ipynb")
            lecture = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
            expect(lecture.locator(".jp-MarkdownCell").first).to_contain_text("performance", ignore_case=True)
            page.screenshot(path=ARTIFACTS / "lecture-from-link.png")
        except Exception:
            page.screenshot(path=ARTIFACTS / "browser-failure.png")
            raise

    assert not list(handout.rglob("gradebook.db")), "serving the labs made a gradebook"
    saved = nbformat.read(str(handout / nb_path), as_version=4)
    assert saved.cells[cells["peak_flops_from_units"]].source.strip() == wrong.strip(), "Validate saves first"
