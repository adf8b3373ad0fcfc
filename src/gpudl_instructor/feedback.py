"""Feedback a student can read and an instructor can open safely.

nbgrader's feedback is an HTML page of the graded notebook. Before it is written here:

- hidden tests are cleared from test cells (nbgrader's ``ClearHiddenTests``), and the
  tracebacks of graded test cells are reduced to their message (a traceback quotes the cell's
  source, hidden tests included);
- paths of the grading machine (the course, the Python installation, scratch folders, the
  instructor's home) are replaced by placeholders in every output;
- what the student wrote is sanitized (nbconvert's ``SanitizeHTML``: markdown, HTML outputs;
  javascript outputs dropped), and the final page is rebuilt from an allowlist by
  ``sanitize_html`` (nh3, the bindings of Rust's ammonia, made for this): the template's title and
  style sheets, and a body of the tags, attributes and URL schemes a notebook page, its images,
  tables and MathML need; no script, frame, form, ``<base>``, ``<meta>``, event handler,
  ``javascript:`` or ``data:`` link.

- equations are MathML, converted from the markdown's LaTeX when the page is made (``MathML``,
  latex2mathml): the page needs no script to show them.

- the table of contents names each test with its points and whether it passed (``name_tests``).

Public names: ``TidyOutputs``, ``MathML``, ``math_to_mathml``, ``name_tests``, ``generate``,
``sanitize_html``, ``scrub_paths``.
"""
from __future__ import annotations

import html
import re
import sys
import tempfile
from pathlib import Path
from typing import Iterable

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _prefixes(extra: Iterable[str] = ()) -> list[tuple[str, str]]:
    import gpudl

    pairs = [(str(Path(gpudl.__file__).resolve().parent), "<gpudl>"),
             (sys.prefix, "<python>"), (sys.base_prefix, "<python>"),
             (tempfile.gettempdir(), "<tmp>"), (str(Path.home()), "<home>")]
    pairs += [(p, "<course>") for p in extra if p]
    pairs = [(p.rstrip("/"), r) for p, r in pairs if p and p not in ("/", "")]
    return sorted(set(pairs), key=lambda pr: -len(pr[0]))


def scrub_paths(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with the grading machine's paths replaced by placeholders."""
    for prefix, repl in _prefixes(extra):
        text = text.replace(prefix, repl)
    return text


def coalesce_streams(outputs: list) -> list:
    """Consecutive writes to one stream as one output, empty writes dropped: how a kernel chunks
    its stdout varies from run to run, and a page must not."""
    kept = []
    for out in outputs:
        if out.get("output_type") == "stream":
            if not out.get("text"):
                continue
            if kept and kept[-1].get("output_type") == "stream" and kept[-1].get("name") == out.get("name"):
                kept[-1]["text"] = kept[-1]["text"] + out["text"]
                continue
        kept.append(out)
    return kept


class TidyOutputs(Preprocessor):
    """Test cells' tracebacks reduced to their message; machine paths scrubbed everywhere."""

    course_root = ""
    enabled = Bool(True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        test = bool(nbg.get("grade")) and not nbg.get("solution")
        extra = [self.course_root, resources.get("gpudl_workdir", "")]
        cell["outputs"] = coalesce_streams(cell.get("outputs", []))
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "error":
                out["evalue"] = scrub_paths(str(out.get("evalue", "")), extra)
                if test:
                    out["traceback"] = [f"{out.get('ename', 'Error')}: {out['evalue']}"]
                else:
                    out["traceback"] = [scrub_paths(_ANSI.sub("", t), extra) for t in out.get("traceback", [])]
            elif kind == "stream":
                out["text"] = scrub_paths(out.get("text", ""), extra)
            elif kind in ("display_data", "execute_result"):
                for key in ("text/plain", "text/html", "text/markdown"):
                    if isinstance(out.get("data", {}).get(key), str):
                        out["data"][key] = scrub_paths(out["data"][key], extra)
        return cell, resources


# --- the page's last pass: an allowlist (nh3, the bindings of Rust's ammonia) ---------------------

# What nbconvert's page, its images, tables and MathML need; everything else goes, with its
# content where the content is code (script, style, templates, embedded documents).
_TAGS = set(__import__("nh3").ALLOWED_TAGS) | {
    "main", "section", "label", "input",            # nbconvert's layout; a disabled checkbox in a task list
    "math", "semantics", "annotation", "mrow", "mi", "mo", "mn", "ms", "mtext", "mspace", "msup", "msub",
    "msubsup", "mfrac", "msqrt", "mroot", "mstyle", "merror", "mpadded", "mphantom", "mfenced", "menclose",
    "mtable", "mtr", "mtd", "munder", "mover", "munderover", "mmultiscripts", "mprescripts", "none"}
_CONTENT_DROPPED = {"script", "style", "template", "noscript", "iframe", "object", "embed", "svg", "title",
                    "textarea", "select", "xmp", "noembed", "noframes", "plaintext"}
_MATH_ATTRS = {"display", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "accent",
               "accentunder", "columnalign", "rowalign", "columnspacing", "rowspacing", "linethickness",
               "displaystyle", "scriptlevel", "notation", "width", "height", "depth", "movablelimits", "encoding"}
_ATTRS = {
    "*": {"class", "id", "title", "lang", "dir", "style", "name", "align"},
    "a": {"href"}, "img": {"src", "alt", "width", "height"}, "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"}, "ol": {"start", "type"}, "input": {"type", "checked", "disabled"},
    **{t: set(_MATH_ATTRS) for t in _TAGS if t.startswith("m") and t not in ("main", "map", "mark")},
    "math": set(_MATH_ATTRS) | {"xmlns"}, "annotation": {"encoding"},
}
# Inline style properties that only lay out and colour (no url(), no position: fixed overlays).
_STYLE_PROPERTIES = {"color", "background-color", "text-align", "vertical-align", "font-weight", "font-style",
                     "font-size", "font-family", "white-space", "width", "max-width", "height", "margin",
                     "margin-left", "margin-right", "margin-top", "margin-bottom", "padding", "padding-left",
                     "padding-right", "border", "border-collapse", "border-bottom", "border-top", "display"}
_IMAGE_DATA = re.compile(r"^data:image/(png|jpe?g|gif|webp|bmp);", re.I)


def _attribute_filter(tag: str, attr: str, value: str) -> str | None:
    """Only images may carry data: URLs (raster images, never SVG, which can script); inputs only as
    a disabled checkbox. A link by a relative path (a lab's "Read first" to its lecture,
    ``../../course/...``) would point nowhere from where the page lies (``feedback/STUDENT/LAB/``):
    it keeps its text (the lecture's path in the course folder) and loses the link."""
    if attr in ("href", "src"):
        v = re.sub(r"[\x00-\x20]+", "", value).lower()
        if v.startswith("data:") and not (tag == "img" and attr == "src" and _IMAGE_DATA.match(v)):
            return None
        if tag == "a" and not re.match(r"#|[a-z][a-z0-9+.-]*:", v):
            return None
    if tag == "input" and attr == "type" and value != "checkbox":
        return None
    return value


def _clean(fragment: str) -> str:
    import nh3

    return nh3.clean(fragment, tags=_TAGS, clean_content_tags=_CONTENT_DROPPED, attributes=_ATTRS,
                     attribute_filter=_attribute_filter, url_schemes={"http", "https", "mailto", "data"},
                     filter_style_properties=_STYLE_PROPERTIES, strip_comments=True, link_rel="noopener noreferrer")


_HEAD = re.compile(r"<head\b[^>]*>(.*?)</head>", re.S | re.I)
_BODY = re.compile(r"<body\b([^>]*)>(.*)</body>", re.S | re.I)
_STYLE = re.compile(r"<style\b[^>]*>(.*?)</style>", re.S | re.I)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title>", re.S | re.I)
_CSS_FETCH = re.compile(r"@import[^;]*;|url\(\s*(?!['\"]?data:)[^)]*\)", re.I)


def sanitize_html(page: str) -> str:
    """``page`` rebuilt from an allowlist: the head keeps its title and the style sheets of the
    page's template (without ``@import`` or a ``url()`` that would fetch); the body is cleaned by
    nh3 (ammonia's HTML5 parser: scripts, event handlers, ``javascript:``/``data:`` links, forms,
    frames, ``<base>``, ``<meta>``, SVG and ``<style>`` in the content are gone; text, tables,
    raster images and MathML stay)."""
    head = _HEAD.search(page)
    body = _BODY.search(page)
    head_html = head.group(1) if head else ""
    if body is None:                   # a fragment: everything is content
        inner, classes = (page[head.end():] if head else page), ""
    else:
        inner = body.group(2)
        cls = re.search(r"""class\s*=\s*["']([A-Za-z0-9 _-]*)["']""", body.group(1))
        classes = f' class="{cls.group(1)}"' if cls else ""
    title = _TITLE.search(head_html)
    styles = "".join("<style>" + _CSS_FETCH.sub("", css).replace("</", "<\\/") + "</style>"
                     for css in _STYLE.findall(head_html))
    title_html = f"<title>{html.escape(html.unescape(title.group(1)))}</title>" if title else ""
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">{title_html}{styles}</head>'
            f"<body{classes}>{_clean(inner)}</body></html>\n")


_DISPLAY_MATH = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\d)")
_CODE = re.compile(r"(```.*?```|`[^`\n]*`)", re.S)


def math_to_mathml(markdown: str) -> str:
    """``$$...$$`` and ``$...$`` of a markdown cell as MathML (latex2mathml), so the page shows its
    equations without MathJax, a script; code spans and blocks are left as they are, and an
    expression the converter cannot read stays as its LaTeX."""
    from latex2mathml.converter import convert

    def one(m: re.Match, display: str) -> str:
        try:
            return convert(html.unescape(m.group(1)).strip(), display=display)
        except Exception:  # noqa: BLE001 - unreadable LaTeX is shown as written
            return m.group(0)

    parts = _CODE.split(markdown)
    for i in range(0, len(parts), 2):          # the even parts are outside code
        text = _DISPLAY_MATH.sub(lambda m: "\n\n" + one(m, "block") + "\n\n", parts[i])
        parts[i] = _INLINE_MATH.sub(lambda m: one(m, "inline"), text)
    return "".join(parts)


class MathML(Preprocessor):
    """Every markdown cell's LaTeX as MathML (after the student's markdown is sanitized)."""

    enabled = Bool(True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            cell.source = math_to_mathml(cell.source)
        return cell, resources


def generate(course: Path, lab: str, student: str, *, course_root: str = "") -> Path | None:
    """nbgrader's feedback for one student of a scratch course (in this process); the page is
    sanitized in place. Returns its path, or None when nbgrader made none."""
    import logging
    from traitlets.config import Config
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbconvert.preprocessors.sanitize import SanitizeHTML
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import ClearHiddenTests, GetGrades

    TidyOutputs.course_root = course_root
    c = Config()
    c.CourseDirectory.root = str(course)
    c.CourseDirectory.course_id = "gpudl"
    c.CourseDirectory.assignment_id = lab
    c.CourseDirectory.student_id = student
    c.SanitizeHTML.enabled = True
    c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, TidyOutputs, SanitizeHTML, MathML,
                                        CSSHTMLHeaderPreprocessor]
    converter = GenerateFeedback(coursedir=CourseDirectory(config=c), config=c)
    converter.log.setLevel(logging.ERROR)
    converter.start()
    page = course / "feedback" / student / lab / f"{lab}.html"
    if not page.exists():
        return None
    page.write_text(sanitize_html(name_tests(scrub_paths(page.read_text(), [course_root, str(course)]))))
    return page


_TOC_TEST = re.compile(r'<li><a href="#(?P<gid>[^"]+)">Test cell</a>\s*\(Score: (?P<score>[\d.]+) / (?P<points>[\d.]+)\)</li>')
_TOC_COMMENT = re.compile(r'\s*<li><a href="#comment-[^"]+">Comment</a></li>')


def name_tests(page: str) -> str:
    """nbgrader's table of contents with each test named, its points and whether it passed (it says
    "Test cell" and "Comment" by turns otherwise)."""
    def entry(m: re.Match) -> str:
        score, points = float(m["score"]), float(m["points"])
        verdict = "passed" if score >= points else ("failed" if score == 0 else "partly passed")
        return (f'<li><a href="#{m["gid"]}">{m["gid"]}</a>: {verdict} '
                f'({score:g} of {points:g} point{"s" if points != 1 else ""})</li>')

    return _TOC_COMMENT.sub("", _TOC_TEST.sub(entry, page))


__all__ = ["MathML", "TidyOutputs", "generate", "math_to_mathml", "name_tests", "sanitize_html", "scrub_paths"]
