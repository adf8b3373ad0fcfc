"""gpudl_instructor.feedback: pages safe to open, without hidden tests or the machine's paths."""
from __future__ import annotations

import sys
from html.parser import HTMLParser

import nbformat

from gpudl_instructor import feedback


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(page: str) -> list[tuple[str, dict]]:
    p = _Tags()
    p.feed(page)
    return p.tags


def test_sanitize_removes_scripts_handlers_and_script_urls_and_keeps_the_rest():
    page = ("<html><head><style>p{color:red}</style><script>alert(1)</script><base href='//evil'></head><body>"
            "<p onclick='x()'>text &amp; more</p><img src='data:image/png;base64,AAAA' onerror='y()'>"
            "<a href=' JaVaScRiPt:alert(2)'>a</a><a href='https://ok.example/x'>b</a>"
            "<iframe src='//x'><p>inside</p></iframe><svg><script>alert(3)</script></svg>"
            "<form action='//x'><input></form><object data='x.swf'></object></body></html>")
    clean = feedback.sanitize_html(page)
    found = tags(clean)
    names = [t for t, _ in found]
    assert "script" not in names and "iframe" not in names and "base" not in names and "form" not in names
    assert not any(k.startswith("on") for _, attrs in found for k in attrs)
    hrefs = [a.get("href") for t, a in found if t == "a"]
    assert hrefs == [None, "https://ok.example/x"]
    assert ("img", {"src": "data:image/png;base64,AAAA"}) in found, "images stay"
    assert "p{color:red}" in clean and "text &amp; more" in clean and "inside" not in clean


def test_paths_of_the_grading_machine_are_replaced():
    text = f"File {sys.prefix}/lib/x.py and /work/course/solutions in {sys.base_prefix}"
    scrubbed = feedback.scrub_paths(text, ["/work/course"])
    assert sys.prefix not in scrubbed and "/work/course" not in scrubbed
    assert "<python>/lib/x.py" in scrubbed and "<course>/solutions" in scrubbed


def test_test_cells_show_their_message_not_their_source():
    cell = nbformat.v4.new_code_cell("check.x(f)\n### BEGIN HIDDEN TESTS\ncheck.x(f, hidden=True)\n### END HIDDEN TESTS",
                                     metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "t"}})
    cell.outputs = [nbformat.v4.new_output("error", ename="GradingError", evalue=f"wrong at {sys.prefix}/a.py",
                                           traceback=["----> 3 check.x(f, hidden=True)", "  File /secret/x.py"])]
    student = nbformat.v4.new_code_cell("1/0")
    student.outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero",
                                              traceback=[f"File {sys.prefix}/y.py", "1/0"])]
    tidy = feedback.TidyOutputs()
    tidy.preprocess_cell(cell, {}, 0)
    tidy.preprocess_cell(student, {}, 1)
    assert cell.outputs[0]["traceback"] == ["GradingError: wrong at <python>/a.py"]
    assert student.outputs[0]["traceback"][0] == "File <python>/y.py", "a student's own error keeps its trace"
