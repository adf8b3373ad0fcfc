"""The instructor's view of a graded class: the report, similarity and LMS grades, tried as an
instructor would on a small class (correct, partly wrong, blank, copied with renamed variables,
broken, late, without an LMS id)."""
from __future__ import annotations

import ast
import csv
import json
import re

import nbformat
import pytest

from conftest import ROOT, SANDBOX, all_mutants, student_copy
from gpudl import notebooks
from gpudl_instructor import lms, pipeline, report, similar

LAB = "lab01_performance_basics"
pytestmark = [pytest.mark.xdist_group("class-report"),   # its module fixture once, on one worker
              pytest.mark.slow, pytest.mark.skipif(not SANDBOX, reason="grading needs the sandbox (bubblewrap)")]


class _Rename(ast.NodeTransformer):
    """Every parameter and local name of a function gets another name (what a copier does)."""

    def visit_FunctionDef(self, node):
        names = {a.arg for a in node.args.args} | {t.id for n in ast.walk(node) if isinstance(n, ast.Assign)
                                                   for t in n.targets if isinstance(t, ast.Name)}
        for n in ast.walk(node):
            if isinstance(n, ast.arg) and n.arg in names:
                n.arg = f"my_{n.arg}"
            elif isinstance(n, ast.Name) and n.id in names:
                n.id = f"my_{n.id}"
        return node


def _copied(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell.cell_type == "code":
            tree = _Rename().visit(ast.parse(cell.source))
            cell.source = "# I worked this out on my own\n" + ast.unparse(tree)
    return nb


def _partly_wrong(release: nbformat.NotebookNode, good: nbformat.NotebookNode):
    """A student of their own: three exercises answered wrong (the mutant bank's whole-cell answers),
    one answered right, the rest left blank; returns the notebook and the first mutant."""
    mutants, cells = [], set()
    for m in all_mutants():
        if m.lab == LAB and not m.replacements and len(m.fails) == 1 and m.cell not in cells:
            mutants.append(m)
            cells.add(m.cell)
        if len(mutants) == 3:
            break
    nb = release
    for m in mutants:
        nb = notebooks.replace_source(nb, m.cell, m.planted(""))
    right = next(c for c in good.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")
                 and c.metadata["nbgrader"]["grade_id"] not in cells)
    return notebooks.replace_source(nb, right.metadata["nbgrader"]["grade_id"], right.source), mutants[0]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    subs = tmp_path_factory.mktemp("subs")
    out = tmp_path_factory.mktemp("class") / "out"
    good = student_copy(LAB)
    release = notebooks.read(ROOT / "labs" / LAB / f"{LAB}.ipynb")
    wrong, mutant = _partly_wrong(release, good)
    bound = notebooks.replace_source(release, "bound", "bound = check.bound\n")
    files = {f"alice_1001_2001_{LAB}.ipynb": good, f"bob_LATE_1002_2002_{LAB}.ipynb": wrong,
             f"carol_1003_2003_{LAB}.ipynb": _copied(good), f"dave_1004_2004_{LAB}.ipynb": release,
             f"erin_1005_2005_{LAB}.ipynb": bound}
    for name, nb in files.items():
        nbformat.write(nb, str(subs / name))
    (subs / f"frank_1006_2006_{LAB}.ipynb").write_text("{ this is not json")
    (subs / "grace").mkdir()
    nbformat.write(release, str(subs / "grace" / f"{LAB}.ipynb"))
    pipeline.grade(LAB, subs, out, root=ROOT, secret="class-secret", jobs=2, progress=False, echo=lambda *_: None)
    pairs = similar.similar(out, root=ROOT)
    page, table = report.write_report([out])        # again, now with the similar pairs
    return out, mutant, pairs, page, table


def _gradebook_scores(out):
    from nbgrader.api import Gradebook, MissingEntry

    scores = {}
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id="gpudl") as gb:
        for s in gb.students:
            try:
                scores[s.id] = float(gb.find_submission_notebook(LAB, LAB, s.id).score)
            except MissingEntry:
                pass
    return scores


def test_the_reports_numbers_are_the_gradebooks(graded):
    out, mutant, _, page, table = graded
    rows = {r["student"]: r for r in csv.DictReader(open(table))}
    book = _gradebook_scores(out)
    assert set(rows) == {"alice", "bob", "carol", "dave", "erin", "frank", "grace"}
    for sid, score in book.items():
        if rows[sid][f"{LAB} status"] == "graded":
            assert float(rows[sid][f"{LAB} score"]) == pytest.approx(score), sid
    assert rows["frank"][f"{LAB} status"] == "not graded" and float(rows["frank"]["total"]) == 0
    assert float(rows["alice"][f"{LAB} score"]) == float(rows["alice"]["max"]) > float(rows["bob"][f"{LAB} score"])
    stats = report.lab_stats(out)[0]
    cell = next(c for c in stats.cell_stats() if c["cell"] == mutant.fails[0])
    graded_rows = [r for r in pipeline.read_scores(out / "grades.csv").values() if r["status"] == "graded"]
    full = sum(1 for r in graded_rows if r[cell["cell"]] == cell["points"])
    assert cell["pass_rate"] == pytest.approx(full / len(graded_rows)) and cell["failed"] >= 1


def test_the_page_shows_figures_reasons_the_ungraded_review_notes_and_late_work_without_script(graded):
    out, mutant, _, page, _ = graded
    text = page.read_text()
    assert len(re.findall(r"<img [^>]*src=\"data:image/png;base64,", text)) >= 3
    assert "<script" not in text.lower() and " on" not in re.sub(r"\s+", " ", "".join(re.findall(r"<[^>]+>", text)))
    stats = report.lab_stats(out)[0]
    reasons = stats.reasons[mutant.fails[0]]
    assert reasons and next(iter(reasons)) in text.replace("&#x27;", "'").replace("&quot;", '"') or \
        next(iter(reasons))[:40] in text
    assert "frank" in text and "invalid" in text.lower()
    assert "binds bound to the package" in text
    assert re.search(r"marked late: bob\b", text)


def test_the_planted_copy_is_the_top_pair_and_blank_work_is_not_flagged(graded):
    out, _, pairs, page, _ = graded
    assert pairs and {pairs[0].a, pairs[0].b} == {"alice", "carol"}, [(p.a, p.b, p.similarity) for p in pairs]
    assert pairs[0].similarity > 0.9 and pairs[0].fragments
    assert not [p for p in pairs if {p.a, p.b} <= {"dave", "erin", "grace"}]
    saved = json.loads((out / "similar.json").read_text())
    assert saved["pairs"][0]["a"] == pairs[0].a
    assert "alice" in page.read_text() and (out / "similar.html").is_file()


def test_canvas_grades_keyed_by_the_canvas_user_id_with_the_late_penalty(graded):
    out, *_ = graded
    done = lms.export(out, "canvas", late_penalty=0.1)
    rows = list(csv.reader(open(done.path)))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", LAB]
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == report.lab_stats(out)[0].max_score
    by_id = {r[1]: r for r in rows[2:]}
    grades = pipeline.read_scores(out / "grades.csv")
    assert float(by_id["1001"][5]) == grades["alice"]["score"]
    assert float(by_id["1002"][5]) == pytest.approx(0.9 * grades["bob"]["score"])
    assert by_id["1006"][5] == "0" and done.without_id == ["grace"] and done.late == ["bob"]
    assert grades["bob"]["late"] == "late" and grades["bob"]["lms_id"] == "canvas:1002"


def test_moodle_grading_worksheet_keyed_by_participant(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / pipeline.STATUS_FILE).write_text(json.dumps({LAB: {
        "ada": {"status": "graded", "name": "Ada Lovelace", "lms": {"lms": "moodle", "id": "731", "late": False}},
        "bo": {"status": "not graded", "reason": "invalid JSON", "name": "Bo Li",
               "lms": {"lms": "moodle", "id": "732", "late": False}},
        "cy": {"status": "graded", "name": "cy"}}}))
    (out / "grades.csv").write_text("student,status,score,max_score,percent,reason,notes,late,lms_id,seconds\n"
                                    "ada,graded,30,32,93.8,,,,moodle:731,4\nbo,not graded,0,32,0,invalid JSON,,,moodle:732,0\n"
                                    "cy,graded,12,32,37.5,,,,,3\n")
    done = lms.export(out, "moodle")
    rows = list(csv.reader(open(done.path)))
    assert rows[0] == lms.MOODLE_COLUMNS
    assert rows[1][:6] == ["Participant 731", "Ada Lovelace", "", "", "30", "32"]
    assert rows[2][0] == "Participant 732" and rows[2][4] == "0" and "invalid JSON" in rows[2][-1]
    assert done.without_id == ["cy"]
    with pytest.raises(ValueError, match="--lms"):
        lms.export(out, "blackboard")


def test_the_report_opens_in_chromium_with_its_figures_and_no_script(graded):
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is missing (pip install -e '.[dev]')")
    from playwright.sync_api import sync_playwright

    from test_browser import CHROMIUM_ARGS, find_chromium

    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium here: `make system-deps` installs Debian's as root")
    page_path = graded[3]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri())
            drawn = page.evaluate("[...document.images].filter(i => i.complete && i.naturalWidth > 100).length")
            scripts = page.evaluate("document.scripts.length")
            headings = page.locator("h3").all_inner_texts()
            page.screenshot(path=str(ROOT / "test-artifacts" / "class-report.png"), full_page=True) \
                if (ROOT / "test-artifacts").is_dir() else None
        finally:
            browser.close()
    assert drawn >= 3 and scripts == 0
    assert {"Tests", "Why tests failed", "Not graded", "For review", "Similar submissions"} <= set(headings)
    assert all(u.startswith(("file:", "data:")) for u in requests), requests     # works offline


EXAMPLE = ROOT / "docs" / "report-example"


def test_the_readmes_example_report_is_made_by_the_code_from_this_class(graded, tmp_path):
    """docs/report-example/ is what ``report.write_example`` makes of this module's class; rewrite it
    with ``GPUDL_WRITE_EXAMPLE=1 pytest tests/test_class_report.py -k readme`` after changing the report."""
    import os

    from matplotlib.image import imread

    made = report.write_example(graded[0], tmp_path)
    if os.environ.get("GPUDL_WRITE_EXAMPLE"):
        report.write_example(graded[0], EXAMPLE)
        readme = (ROOT / "README.md").read_text()
        start, end = "<!-- report-example -->\n", "<!-- /report-example -->"
        head, rest = readme.split(start)
        readme = head + start + (EXAMPLE / "report.md").read_text() + end + rest.split(end, 1)[1]
        (ROOT / "README.md").write_text(readme)
    for path in made:
        kept = EXAMPLE / path.name
        assert kept.is_file(), f"{kept} is missing: rewrite the example (see this test's docstring)"
        if path.suffix == ".png":
            new, old = imread(path), imread(kept)
            assert new.shape == old.shape and (abs(new - old).max() < 1e-6), f"{kept} is not current"
        else:
            assert path.read_text() == kept.read_text(), f"{kept} is not current"
    text = (EXAMPLE / "report.md").read_text()
    assert "6 of 7 student(s) graded" in text and "| frank | invalid notebook" in text   # the class, as built
    readme = (ROOT / "README.md").read_text()
    assert text in readme, "the README's example report is not docs/report-example/report.md"
    for name in ("histogram.png", "pass_rates.png"):
        assert f"(docs/report-example/{name})" in readme


def test_reasons_lose_their_numbers_and_values_but_keep_names_and_words():
    key = report.reason_key
    assert key("conv2d_flops on the lecture's VGG layer: your result is 4.5e9, expected 9e9: off by a factor "
               "of 2") == "conv2d_flops on the lecture's VGG layer: your result is …, expected …: off by a factor of …"
    assert key("lstm_flops(T=20, N=4, D=8) is 3, expected 6") == "lstm_flops(T=…, N=…, D=…) is …, expected …"
    assert key("peak on the V100, fp16: got 'x' and [1, 2, 3]") == "peak on the V100, fp16: got '…' and […]"
    assert key("a result of -3 at 0.5") == key("a result of 7 at 12")


def test_the_histogram_counts_students_in_whole_numbers(graded, monkeypatch):
    """Seven students: matplotlib's default ticks on the count axis would be 0, 0.5, 1, ..."""
    figures = []
    monkeypatch.setattr(report, "_png", lambda fig: figures.append(fig) or "")
    report._histogram(report.lab_stats(graded[0])[0])
    ticks = figures[0].axes[0].get_yticks()
    assert len(ticks) > 1 and all(float(t).is_integer() for t in ticks), ticks
