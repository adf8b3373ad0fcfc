"""A student's feedback page in Chromium: lab06 graded in the sandbox with one exercise wrong, the
page opened from disk as a student opens it. Its equations are drawn as MathML (no script, no
request anywhere), its table of contents names each test with its verdict, and no hidden test or
raw LaTeX shows."""
from __future__ import annotations

import re

import pytest

from conftest import ROOT, SANDBOX, SECRET, all_mutants, student_copy
from test_browser import CHROMIUM_ARGS, chromium  # noqa: F401 - chromium: the fixture, shared

from gpudl import notebooks
from gpudl_instructor import pipeline

LAB = "lab06_lstm_bptt"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not SANDBOX, reason="grading needs the sandbox (bubblewrap)")]


@pytest.fixture(scope="module")
def page_path(lab_course):
    course = lab_course(LAB)
    mutant = next(m for m in all_mutants() if m.lab == LAB and m.cell == "lstm_flops")
    nb = student_copy(LAB)
    solution = notebooks.find_cell(nb, mutant.cell).source
    nb = notebooks.replace_source(nb, mutant.cell, mutant.planted(solution))
    path = course.workdir / "feedback-student.ipynb"
    notebooks.write(nb, path)
    result, _ = pipeline.autograde_student(
        LAB, "feedback-student", path, course.base_gradebook, course.workdir / "feedback-students",
        seed=pipeline.student_seed(SECRET, LAB, "feedback-student"), sandbox=SANDBOX, feedback=True)
    assert result.graded and result.feedback is not None, result.reason
    return result.feedback, mutant


def test_the_feedback_page_draws_its_equations_and_names_its_tests(page_path, chromium):
    from playwright import sync_api

    exe = chromium
    path, mutant = page_path
    html = path.read_text()
    hidden = [line.strip() for cell in notebooks.read(ROOT / "solutions" / LAB / f"{LAB}.ipynb").cells
              for block in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", cell.source, re.S)
              for line in block.splitlines() if line.strip()]
    assert hidden and not [line for line in hidden if line in html], "the page quotes a hidden test"
    requests = []
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        drawn = page.evaluate("""() => [...document.querySelectorAll('math')].filter(
                                   m => m.getBoundingClientRect().width > 0 && m.getBoundingClientRect().height > 0).length""")
        scripts = page.evaluate("() => document.scripts.length")
        text = page.inner_text("body")
        toc = page.evaluate("() => [...document.querySelectorAll('li')].map(li => li.innerText)")
        browser.close()
    assert drawn >= 3, f"only {drawn} equations drawn as MathML"
    assert scripts == 0
    assert "$$" not in text and "\\tanh" not in text and "\\sigma" not in text, "raw LaTeX on the page"
    assert not [u for u in requests if not u.startswith(("file:", "data:"))], requests
    failed = [line for line in toc if line.startswith(mutant.fails[0])]
    assert failed and "failed" in failed[0], toc
    assert any(re.match(r"test_\w+: passed \(\d+(\.\d+)? of \d+(\.\d+)? points\)", line) for line in toc), toc
    assert not [line for line in toc if line.strip() in ("Test cell", "Comment")]
