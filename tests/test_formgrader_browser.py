"""The instructor's formgrader in a real browser: `gpudl grade` on two students of lab01, then
`gpudl formgrader OUT` in Chromium (Playwright driving Debian's package, as tests/test_browser.py).

It opens on Manage Assignments, without nbgrader's exchange warning; the graded lab shows its two
submissions with a link to them; names read "alice" (not "alice,") and timestamps are the submitted
files' times (not "None"); Autograde says which gpudl command grades (student code runs only in the
sandbox) and changes nothing; Generate Feedback remakes gpudl's page, with the instructor's manual
comment, and that page holds no hidden test and no script. Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, SANDBOX, student_copy
from test_browser import CHROMIUM_ARGS, chromium, patient_expect  # noqa: F401 - chromium: the fixture, shared
from test_jupyterlab import free_port, serving

from gpudl import notebooks

LAB = "lab01_performance_basics"
WRONG = ROOT / "tests" / "mutants" / LAB / "peak_flops_from_units__no_factor_2.py"
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "gpudl-formgrader-browser-token"
# A script in a page: the tag, an event handler, a javascript: link.
SCRIPT = re.compile(r"<script|<[^>]*\son[a-z]+\s*=|<[^>]*\s(href|src)\s*=\s*[\x22\x27]?\s*javascript:", re.I)
pytestmark = [pytest.mark.xdist_group("formgrader-browser"),   # its module fixture once, on one worker
              pytest.mark.slow, pytest.mark.skipif(not SANDBOX, reason="grading needs the sandbox (bubblewrap)")]


def hidden_test_lines() -> list[str]:
    """Every line between the hidden-test markers of the instructor's lab01 notebook."""
    nb = notebooks.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb")
    lines = []
    for cell in nb.cells:
        for block in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", cell.source, re.S):
            lines += [line.strip() for line in block.splitlines() if line.strip()]
    assert lines, "lab01 has no hidden tests: pick a lab that has"
    return lines


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """OUT of `gpudl grade` for alice (the solutions) and bob (an FMA counted once)."""
    from gpudl_instructor import pipeline

    tmp = tmp_path_factory.mktemp("formgrader")
    subs, out = tmp / "subs", tmp / "grades" / "lab01"
    for student in ("alice", "bob"):
        (subs / student).mkdir(parents=True)
    nbformat.write(student_copy(LAB), str(subs / "alice" / f"{LAB}.ipynb"))
    wrong = "\n".join(line for line in WRONG.read_text().splitlines() if not line.startswith("# "))
    nbformat.write(notebooks.replace_source(student_copy(LAB), "peak_flops_from_units", wrong),
                   str(subs / "bob" / f"{LAB}.ipynb"))
    os.utime(subs / "alice" / f"{LAB}.ipynb", (1_700_000_000, 1_700_000_000))     # 2023-11-14 22:13:20 UTC
    results = pipeline.grade(LAB, subs, out, root=ROOT, secret="formgrader-secret", jobs=2, progress=False,
                             echo=lambda *_: None)
    assert {r.student: r.graded for r in results} == {"alice": True, "bob": True}, [r.line() for r in results]
    return tmp, subs, out


@pytest.fixture(scope="module")
def served(graded):
    tmp, subs, out = graded
    port = free_port()
    cmd = [sys.executable, "-m", "gpudl_instructor", "formgrader", str(out), "--no-browser", "--port", str(port),
           "--token", TOKEN, "--ServerApp.ip=127.0.0.1"]
    with serving(cmd, tmp, tmp / "home", port, TOKEN) as base:
        yield base, subs, out


def api(base: str, path: str, method: str = "GET", body: dict | None = None):
    """The formgrader's JSON API, with the token."""
    data = json.dumps(body).encode() if body is not None else (b"" if method != "GET" else None)
    request = urllib.request.Request(f"{base}/formgrader/api/{path}", data=data, method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def shown_time(path: Path) -> str:
    """How nbgrader's formgrader shows a time (UTC, its default format): the file's modification time."""
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _browser(pw, chromium: str, tmp: Path):
    patient_expect()
    browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    return browser, page


def test_the_formgrader_shows_the_graded_lab_its_submissions_names_and_times(served, chromium, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    base, subs, out = served
    autograded = out / "autograded" / "bob" / LAB / f"{LAB}.ipynb"
    before = autograded.read_bytes()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser, page = _browser(pw, chromium, tmp_path)
        try:
            # The landing page is the formgrader's Manage Assignments, not JupyterLab's Launcher.
            page.goto(f"{base}/?token={TOKEN}")
            expect(page).to_have_url(re.compile(r"/formgrader/manage_assignments/?$"))
            row = page.locator("#main-table tr", has_text=LAB)
            expect(row).to_have_count(1)
            expect(page.locator("#warning-exchange")).to_have_count(0)
            expect(page.locator("#gpudl-note")).to_contain_text(f"gpudl grade LAB SUBMISSIONS --out {out}")
            expect(row.locator("td.status")).to_have_text("released")
            count = row.locator("td.num-submissions a")
            expect(count).to_have_text("2")
            page.screenshot(path=ARTIFACTS / "formgrader-assignments.png")

            # The count links to the lab's submissions: one-word names as they are, the files' times.
            count.click()
            expect(page).to_have_url(re.compile(rf"/formgrader/manage_submissions/{LAB}/?$"))
            rows = page.locator("#main-table tr", has=page.locator("td.student-id"))
            expect(rows).to_have_count(2)
            for student in ("alice", "bob"):
                student_row = page.locator("#main-table tr", has=page.locator("td.student-id", has_text=student))
                expect(student_row.locator("td.student-name")).to_have_text(student)
                expect(student_row.locator("td.timestamp")).to_have_text(shown_time(subs / student / f"{LAB}.ipynb"))
            alice = page.locator("#main-table tr", has=page.locator("td.student-id", has_text="alice"))
            expect(alice.locator("td.timestamp")).to_have_text("2023-11-14 22:13:20 UTC")
            page.screenshot(path=ARTIFACTS / "formgrader-submissions.png")

            # Autograde says which command grades, in the sandbox, and runs nothing here.
            bob = page.locator("#main-table tr", has=page.locator("td.student-id", has_text="bob"))
            bob.locator("td.autograde a").click()
            dialog = page.locator("#error-modal")
            expect(dialog).to_contain_text(f"gpudl grade {LAB} SUBMISSIONS --out {out}")
            expect(dialog).not_to_contain_text("Traceback")
            page.screenshot(path=ARTIFACTS / "formgrader-autograde.png")

            # Manage Students: the same names.
            page.goto(f"{base}/formgrader/manage_students")
            names = page.locator("#main-table td.name")
            expect(names).to_have_text(["alice", "bob"])
        except Exception:
            page.screenshot(path=ARTIFACTS / "formgrader-failure.png")
            raise
        finally:
            browser.close()
    assert autograded.read_bytes() == before, "Autograde in the formgrader changed the graded notebook"


def test_generate_feedback_remakes_gpudls_page_with_the_manual_comment(served, chromium, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    base, _, out = served
    pages = {s: out / "feedback" / s / LAB / f"{LAB}.html" for s in ("alice", "bob")}
    for page_path in pages.values():
        page_path.unlink()
    # The instructor comments on bob's answer (in the formgrader's API, as its comment box does).
    status, submissions = api(base, f"submitted_notebooks/{LAB}/{LAB}")
    assert status == 200, submissions
    bob_id = next(s["id"] for s in submissions if s["student"] == "bob")
    comments = api(base, f"comments?submission_id={bob_id}")[1]
    comment = next(c for c in comments if c["name"] == "peak_flops_from_units")
    remark = "An FMA is a multiply and an add: count both."
    status, saved = api(base, f"comment/{comment['id']}", "PUT",
                        {"manual_comment": remark + ' <script>alert("x")</script><img src=x onerror=alert(1)>'})
    assert status == 200 and saved["manual_comment"].startswith(remark), saved

    with sync_playwright() as pw:
        browser, page = _browser(pw, chromium, tmp_path)
        try:
            page.goto(f"{base}/formgrader/manage_assignments?token={TOKEN}")
            row = page.locator("#main-table tr", has_text=LAB)
            row.locator("td.generate-feedback a").click()
            dialog = page.locator("#success-modal")
            expect(dialog).to_contain_text("Successfully generated feedback", timeout=120_000)
            expect(dialog).to_contain_text("no hidden tests, no scripts")
            page.screenshot(path=ARTIFACTS / "formgrader-feedback.png")
        except Exception:
            page.screenshot(path=ARTIFACTS / "formgrader-failure.png")
            raise
        finally:
            browser.close()

    hidden = hidden_test_lines()
    for student, page_path in pages.items():
        assert page_path.is_file(), f"Generate Feedback made no page for {student}"
        text = page_path.read_text()
        script = SCRIPT.search(text)
        assert script is None, f"{student}'s page holds a script: {script and script.group(0)}"
        leaked = [line for line in hidden if line in text]
        assert not leaked, f"{student}'s page quotes hidden tests: {leaked}"
        assert "Traceback (most recent call last)" not in text and "BEGIN HIDDEN TESTS" not in text
    bob = pages["bob"].read_text()
    assert remark in bob, "the page was not remade from the gradebook (the manual comment is missing)"
    assert "a missing factor 2" in bob, "bob's page lost the failing test's message"


def test_buttons_that_would_bypass_gpudl_are_refused_with_the_command_to_use(served):
    base, _, out = served
    release = sorted(p.relative_to(out) for p in (out / "release").rglob("*"))
    cases = {f"assignment/{LAB}/assign": "gpudl release", f"assignment/{LAB}/release": "gpudl handout",
             f"assignment/{LAB}/unrelease": "gpudl handout", f"assignment/{LAB}/collect": "gpudl grade",
             f"assignment/{LAB}/release_feedback": "gpudl export", f"assignment/{LAB}/bob/release_feedback": "gpudl export",
             f"submission/{LAB}/bob/autograde": "gpudl grade"}
    for path, command in cases.items():
        status, answer = api(base, path, "POST")
        assert status == 200 and answer["success"] is False and command in answer["log"], (path, answer)
    status, answer = api(base, f"assignment/{LAB}/..%2F..%2Fgradebook/generate_feedback", "POST")
    assert status in (200, 404) and (status == 404 or answer["success"] is False), answer
    assert sorted(p.relative_to(out) for p in (out / "release").rglob("*")) == release
    assert not list(out.rglob("submitted")) and not (out / "exchange").exists()


def test_the_instructors_jupyterlab_has_no_news_pop_up(served, chromium, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    base, _, _ = served
    with sync_playwright() as pw:
        browser, page = _browser(pw, chromium, tmp_path)
        try:
            page.goto(f"{base}/lab?token={TOKEN}")
            expect(page.locator("#jp-main-dock-panel")).to_be_visible(timeout=120_000)
            page.wait_for_timeout(3000)            # the pop-up comes a moment after the page
            expect(page.get_by_text("official Jupyter news")).to_have_count(0)
        finally:
            browser.close()
