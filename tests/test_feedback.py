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


def test_a_relative_link_keeps_its_text_and_loses_its_target():
    """The lab's "Read first" link, ``../../course/06_lstm_bptt.ipynb``, points nowhere from
    ``feedback/STUDENT/LAB/``; links within the page and to the web stay."""
    clean = feedback.sanitize_html('<html><body><p><a href="../../course/06_lstm_bptt.ipynb">course/06_lstm_bptt.ipynb'
                                   '</a> <a href="#test_lstm_flops">a test</a> <a href="https://pytorch.org/docs">docs</a>'
                                   '</p></body></html>')
    assert "course/06_lstm_bptt.ipynb" in clean and "../../course" not in clean
    assert 'href="#test_lstm_flops"' in clean and 'href="https://pytorch.org/docs"' in clean


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


BYPASSES = [
    "<svg onload=alert(1)><animate onbegin=alert(1) attributeName=x></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph></table></mtext></math>",
    "<math><mi xlink:href='javascript:alert(1)'>x</mi></math>",
    "<iframe srcdoc='&lt;script&gt;alert(1)&lt;/script&gt;'></iframe>",
    "<form><button formaction='javascript:alert(1)'>go</button></form>",
    "<meta http-equiv='refresh' content='0;url=javascript:alert(1)'>",
    "<a href='&#x6A;avascript:alert(1)'>e</a><a href='JaVaScRiPt&colon;alert(1)'>c</a>",
    "<a href=' \tjava\nscript:alert(1)'>w</a>",
    "<a href='data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=='>d</a>",
    "<img src='data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+'><img src='DaTa:text/html,x'>",
    "<style>body{background:url(https://evil.example/leak)}</style><p style='background:url(https://e/)'>s</p>",
    "<base href='https://evil.example/'><object data='x.swf'></object><embed src='x.swf'>",
    "<div><template><script>alert(1)</script></template><noscript><p title='</noscript><img src=x onerror=alert(1)>'>"
    "</p></noscript></div>",
]


def test_the_allowlist_survives_the_usual_bypasses():
    page = ("<html><head><title>lab</title><style>p{color:red}</style>"
            "<meta http-equiv='refresh' content='0;url=https://evil.example'></head><body>"
            + "".join(BYPASSES) + "<p>kept</p><math display='block'><mi>x</mi><mo>=</mo><mn>2</mn></math>"
            "<img src='data:image/png;base64,AAAA'></body></html>")
    clean = feedback.sanitize_html(page)
    found = tags(clean)
    names = {t for t, _ in found}
    assert [t for t, _ in found if t == "meta"] == ["meta"] and ("meta", {"charset": "utf-8"}) in found
    assert [t for t, _ in found].count("style") == 1 and "evil" not in clean
    for tag, attrs in found:
        assert not any(k.startswith("on") or k in ("srcdoc", "formaction", "xlink:href", "http-equiv")
                       for k in attrs), (tag, attrs)
        for key in ("href", "src"):
            v = "".join(attrs.get(key, "").split()).lower()
            assert not v.startswith(("javascript", "data:text", "data:image/svg")), (tag, attrs)
    assert "alert(1)" not in "".join(str(a) for _, a in found)
    assert not names & {"script", "svg", "iframe", "form", "button", "base", "object", "embed", "template",
                        "noscript", "animate", "mglyph"}, names
    assert "<p>kept</p>" in clean and '<math display="block"><mi>x</mi><mo>=</mo><mn>2</mn></math>' in clean
    assert ("img", {"src": "data:image/png;base64,AAAA"}) in found


def test_equations_become_mathml_that_the_allowlist_keeps_and_prices_and_code_stay():
    md = ("The gate $a_t = \\tanh(z_a)$ costs $5 or $10; `$x$` is code.\n\n"
          "$$\\frac{\\partial E}{\\partial W} = \\delta\\, x^T$$")
    out = feedback.math_to_mathml(md)
    assert out.count("<math") == 2 and 'display="block"' in out and "<mfrac>" in out
    assert "$5 or $10" in out and "`$x$`" in out
    page = feedback.sanitize_html(f"<html><body><div>{out}</div></body></html>")
    assert "<mfrac>" in page and 'display="block"' in page and "<msub><mi>a</mi><mi>t</mi></msub>" in page


def test_the_table_of_contents_names_each_test_and_its_verdict():
    toc = ('<ul><li><a href="#test_lstm_flops">Test cell</a> (Score: 0.0 / 2.0)</li>\n'
           '<li><a href="#comment-lstm_flops">Comment</a></li>\n'
           '<li><a href="#test_sgd_step">Test cell</a> (Score: 2.0 / 2.0)</li></ul>')
    named = feedback.name_tests(toc)
    assert "Test cell" not in named and "Comment" not in named
    assert '<a href="#test_lstm_flops">test_lstm_flops</a>: failed (0 of 2 points)' in named
    assert '<a href="#test_sgd_step">test_sgd_step</a>: passed (2 of 2 points)' in named


def test_a_stream_chunked_differently_gives_the_same_page():
    from gpudl_instructor.feedback import coalesce_streams
    one = [{"output_type": "stream", "name": "stdout", "text": "visible cases passed\n"}]
    chunked = [{"output_type": "stream", "name": "stdout", "text": "visible "},
               {"output_type": "stream", "name": "stdout", "text": ""},
               {"output_type": "stream", "name": "stdout", "text": "cases passed\n"}]
    assert coalesce_streams(chunked) == one
    mixed = [{"output_type": "stream", "name": "stdout", "text": "a"},
             {"output_type": "stream", "name": "stderr", "text": "b"},
             {"output_type": "stream", "name": "stdout", "text": "c"}]
    assert [o["text"] for o in coalesce_streams(mixed)] == ["a", "b", "c"]
