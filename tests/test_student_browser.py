"""Where a student starts, in a real browser (driven as tests/test_browser.py drives it, on a fresh
hand-out served by `gpudl lab`).

- `gpudl lab` opens on START.ipynb, which lists every unit in order with its lecture and its lab;
  a click on a lab opens it.
- A lab's "Read first" link is a link (an <a> in the link colour, not inline code) and opens the
  lecture; the lecture has no Validate button, the lab has one.
- Validate's answer begins with a summary line, "1 of 12 tests pass (4 of 32 points)", counted here
  from the notebook's own grading metadata, then names each failed test with its points.

Screenshots go to test-artifacts/ (student-browser-last.png: where the last test ended).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_browser import ARTIFACTS, KERNEL_READY, LAB, _cells, chromium, lab_page, served  # noqa: F401 - fixtures

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]   # one JupyterLab server for the module

LECTURE = "course/01_performance_basics.ipynb"
ANSWERED = "peak_flops_from_units"          # the one exercise answered before Validate
ANSWER = '''def peak_flops_from_units(sms, fma_per_clock_per_sm, clock_mhz):
    """Peak FLOP/s of `sms` SMs doing `fma_per_clock_per_sm` FMAs per clock at `clock_mhz` MHz."""
    return sms * fma_per_clock_per_sm * 2 * clock_mhz * 1e6
'''

CONTEXT_READY = "() => { const w = window.jupyterapp.shell.currentWidget; return !!(w && w.context && w.context.isReady); }"
VISIBLE_LINKS = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-RenderedMarkdown a'))
    .map(a => decodeURIComponent(new URL(a.href, location.href).pathname))"""     # the path JupyterLab opens


def count_tests_and_points(path: Path, answered: str) -> tuple[int, float, float]:
    """From the notebook's nbgrader metadata: the number of test cells, the points of all of them and
    of the test of ``answered``."""
    cells = [c["metadata"]["nbgrader"] for c in json.loads(path.read_text())["cells"]
             if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("grade")
             and not c["metadata"]["nbgrader"].get("solution")]
    return len(cells), sum(c["points"] for c in cells), next(c["points"] for c in cells
                                                            if c["grade_id"] == f"test_{answered}")


@pytest.fixture
def page(served, chromium):
    base, token, handout, tmp = served
    ARTIFACTS.mkdir(exist_ok=True)
    with lab_page(chromium, tmp / "student-chromium-profile") as page:
        yield page
        page.screenshot(path=ARTIFACTS / "student-browser-last.png")     # where the test ended, passed or not


def current_tab(page):
    return page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current")


def visible_toolbar(page):
    return page.locator(".jp-NotebookPanel:visible > .jp-Toolbar")        # the notebook's, not a cell's


def test_the_start_page_leads_to_each_unit_and_a_lab_reads_its_lecture_first(served, page):
    from playwright.sync_api import expect

    base, token, handout, _ = served
    lectures = sorted(p.relative_to(handout).as_posix() for p in handout.glob("course/*.ipynb"))
    labs = sorted(p.relative_to(handout).as_posix() for p in handout.glob("labs/*/*.ipynb"))
    assert len(lectures) == len(labs) == 10

    # The server's front page is the start page.
    page.goto(f"{base}/?token={token}")
    expect(current_tab(page)).to_contain_text("START.ipynb")
    start = page.locator(".jp-NotebookPanel:visible .jp-Notebook")
    expect(start.locator(".jp-RenderedMarkdown table")).to_contain_text("then do")
    hrefs = page.evaluate(VISIBLE_LINKS)
    assert [next((t for t in lectures if h.endswith("/" + t)), h) for h in hrefs if "/course/" in h] == lectures
    assert [next((t for t in labs if h.endswith("/" + t)), h) for h in hrefs if "/labs/" in h] == labs
    page.screenshot(path=ARTIFACTS / "start-page.png")

    # A click on unit 01's lab opens it, with its Validate button.
    start.locator(f"a[href*='/{labs[0]}']").click()
    expect(current_tab(page)).to_contain_text(Path(labs[0]).name)
    expect(visible_toolbar(page).get_by_text("Validate", exact=True)).to_be_visible()

    # Its "Read first" link is a link, not inline code, and looks like one.
    intro = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(_cells(handout / labs[0])["intro"])
    read_first = intro.locator("p", has_text="Read first")
    link = read_first.locator(f"a[href*='/{LECTURE}']")
    expect(link).to_have_count(1)
    expect(link).to_have_text(LECTURE)
    expect(link.locator("code")).to_have_count(0)
    expect(read_first.locator("code", has_text=LECTURE)).to_have_count(0)
    colour = "el => getComputedStyle(el).color"
    assert link.evaluate(colour) != read_first.evaluate(colour), "the link is coloured like the text around it"
    intro.scroll_into_view_if_needed()
    page.screenshot(path=ARTIFACTS / "read-first-link.png")

    # It opens the lecture, which has no Validate: a lecture has nothing to validate.
    link.click()
    expect(current_tab(page)).to_contain_text(Path(LECTURE).name)
    page.wait_for_function(CONTEXT_READY)
    expect(page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-MarkdownCell").first).to_be_visible()
    page.wait_for_timeout(2000)         # the button would be added as soon as the notebook is loaded
    expect(visible_toolbar(page)).to_have_count(1)
    expect(visible_toolbar(page).get_by_role("button")).not_to_have_count(0)   # a toolbar with its buttons
    expect(page.locator(".jp-NotebookPanel:visible .validate-button")).to_have_count(0)
    expect(visible_toolbar(page).get_by_text("Validate")).to_have_count(0)
    page.screenshot(path=ARTIFACTS / "lecture-without-validate.png")


def test_validate_begins_with_how_many_tests_pass_and_the_points(served, page):
    from playwright.sync_api import expect

    base, token, handout, _ = served
    path = handout / "labs" / LAB / f"{LAB}.ipynb"
    nb = json.loads(path.read_text())
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == ANSWERED)
    cell["source"] = ANSWER                     # the student answered one exercise and saved
    path.write_text(json.dumps(nb, indent=1) + "\n")
    tests, points, earned = count_tests_and_points(path, ANSWERED)
    line = f"1 of {tests} tests pass ({earned:g} of {points:g} points)"

    page.goto(f"{base}/lab/tree/labs/{LAB}/{LAB}.ipynb?token={token}")
    page.wait_for_function(KERNEL_READY)
    visible_toolbar(page).get_by_text("Validate", exact=True).click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Validation Results", timeout=300_000)
    verdict = dialog.locator("#validation-message")
    expect(verdict.locator("> :first-child")).to_have_text(line)
    expect(verdict.locator("> :first-child")).to_have_class(re.compile(r"\bgpudl-validate-summary\b"))
    assert verdict.inner_text().startswith(line)
    expect(verdict).to_have_class(re.compile(r"\bvalidation-failed\b"))
    # Each failed test is named with its points, once; the answered one is not among them.
    failed = verdict.locator("p", has_text="The following cell failed:")
    expect(failed).to_have_count(tests - 1)
    expect(failed.first).to_have_text(re.compile(r"^The following cell failed: test_\w+ \(0 of \d+ points\)$"))
    expect(verdict).not_to_contain_text(f"test_{ANSWERED} ")
    page.screenshot(path=ARTIFACTS / "validate-summary.png")
    dialog.get_by_role("button", name="Ok").click()
    expect(dialog).to_have_count(0)
