"""Feedback a student can read and an instructor can open safely.

nbgrader's feedback is an HTML page of the graded notebook. Before it is written here:

- hidden tests are cleared from test cells (nbgrader's ``ClearHiddenTests``), and the
  tracebacks of graded test cells are reduced to their message (a traceback quotes the cell's
  source, hidden tests included);
- paths of the grading machine (the course, the Python installation, scratch folders, the
  instructor's home) are replaced by placeholders in every output;
- what the student wrote is sanitized (nbconvert's ``SanitizeHTML``: markdown, HTML outputs;
  javascript outputs dropped), and the final page passes ``sanitize_html``: no script, no
  iframe/object/embed/form/base, no event handlers, no ``javascript:`` links; images stay.

Public names: ``TidyOutputs``, ``generate``, ``sanitize_html``, ``scrub_paths``.
"""
from __future__ import annotations

import html
import re
import sys
import tempfile
from html.parser import HTMLParser
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


_DROP = {"script", "iframe", "object", "embed", "applet", "form", "base", "frame", "frameset", "noscript"}
_URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "data", "poster", "background", "srcset"}
_VOID = {"area", "base", "br", "col", "embed", "frame", "hr", "img", "input", "keygen", "link", "meta", "param",
         "source", "track", "wbr"}


class _Cleaner(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.out: list[str] = []
        self.skip = 0              # depth inside a dropped element

    def _attrs(self, tag: str, attrs: list[tuple[str, str | None]]) -> str:
        kept = []
        for name, value in attrs:
            name = name.lower()
            if name.startswith("on") or name in ("srcdoc", "formaction"):
                continue
            if name in _URL_ATTRS and value is not None:
                v = re.sub(r"[\x00-\x20]+", "", html.unescape(value)).lower()
                if v.startswith(("javascript:", "vbscript:", "data:text/html", "data:image/svg")):
                    continue
            if tag == "meta" and name == "http-equiv":
                continue
            kept.append(name if value is None else f'{name}="{html.escape(value, quote=True)}"')
        return (" " + " ".join(kept)) if kept else ""

    def handle_starttag(self, tag, attrs):
        if tag in _DROP:
            if tag not in _VOID:
                self.skip += 1
            return
        if not self.skip:
            self.out.append(f"<{tag}{self._attrs(tag, attrs)}>")

    def handle_startendtag(self, tag, attrs):
        if tag not in _DROP and not self.skip:
            self.out.append(f"<{tag}{self._attrs(tag, attrs)} />")

    def handle_endtag(self, tag):
        if tag in _DROP:
            if tag not in _VOID and self.skip:
                self.skip -= 1
            return
        if not self.skip:
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data)

    def handle_entityref(self, name):
        if not self.skip:
            self.out.append(f"&{name};")

    def handle_charref(self, name):
        if not self.skip:
            self.out.append(f"&#{name};")

    def handle_comment(self, data):
        pass

    def handle_decl(self, decl):
        self.out.append(f"<!{decl}>")

    def unknown_decl(self, data):
        pass

    def handle_pi(self, data):
        pass


def sanitize_html(page: str) -> str:
    """``page`` without scripts, active embeds, forms, event handlers and script URLs."""
    cleaner = _Cleaner()
    cleaner.feed(page)
    cleaner.close()
    return "".join(cleaner.out)


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
    c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, TidyOutputs, SanitizeHTML,
                                        CSSHTMLHeaderPreprocessor]
    converter = GenerateFeedback(coursedir=CourseDirectory(config=c), config=c)
    converter.log.setLevel(logging.ERROR)
    converter.start()
    page = course / "feedback" / student / lab / f"{lab}.html"
    if not page.exists():
        return None
    page.write_text(sanitize_html(scrub_paths(page.read_text(), [course_root, str(course)])))
    return page


__all__ = ["TidyOutputs", "generate", "sanitize_html", "scrub_paths"]
