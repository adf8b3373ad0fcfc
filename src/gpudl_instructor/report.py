"""The instructor's view of a class: ``gpudl report OUT [OUT ...]`` (and the end of ``gpudl grade``).

Writes ``report.html`` and ``report.csv`` (into the one ``OUT``, or ``--dest`` for several labs):

- the score distribution (a histogram; mean, median, quartiles);
- each test cell's pass rate and mean score with its points, as Gradebook's question statistics;
- for each test, the most frequent reasons it failed, grouped across students: the checks'
  teaching messages with their numbers and quoted values taken out ("your FLOPs is N, expected N:
  off by a factor of N: an FMA is N FLOPs — 14 students");
- who could not be graded and why, the ``review:`` notes, late submissions, the grading time per
  student (a figure), and the similar pairs ``gpudl similar`` found (``similar.json``);
- over several labs, each student's row across them (``report.csv``: one row per student).

Figures are made with matplotlib and embedded as PNG data; the page is static, works offline, and
goes through the feedback pages' sanitizer (no script, no event handler, no external resource).

``write_example`` writes one lab's figures and tables as PNG and Markdown files: the README's
example (``docs/report-example/``) is made by it from the class ``tests/test_class_report.py``
grades, and that test proves the files current.

Public names: ``LabStats``, ``lab_stats``, ``reason_key``, ``write_report``, ``write_example``.
"""
from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .grades import STATUS_FILE, read_scores

TOP_REASONS = 5
# A number standing alone (not the 100 of "V100" or the 16 of "fp16"), a bracketed array, and a
# quoted value ('...' that does not start at an apostrophe: "the lecture's").
_NUMBER = re.compile(r"(?<![A-Za-z_0-9.])[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?(?![A-Za-z_0-9])")
_ARRAY = re.compile(r"\[[^\[\]]*\]")
_QUOTED = re.compile(r"(?<![A-Za-z0-9])'[^'\n]*'(?![A-Za-z])|\"[^\"\n]*\"")


def reason_key(text: str) -> str:
    """A failure message with its numbers, arrays and quoted values taken out, so the same mistake
    made on different cases reads the same: "your FLOPs is 4, expected 8: off by a factor of 2"
    -> "your FLOPs is …, expected …: off by a factor of …" (an ellipsis, not a letter that a message
    may use as a name: "lstm_flops(T=…, N=…, D=…)")."""
    text = _ARRAY.sub("[…]", text)
    text = _QUOTED.sub("'…'", text)
    text = _NUMBER.sub("…", text)
    return re.sub(r"\s+", " ", text).strip()[:300]


@dataclass
class LabStats:
    """One lab's grading output, summarized."""

    lab: str
    out: Path
    max_score: float
    cells: dict[str, float]                              # test cell -> points
    rows: dict[str, dict[str, Any]]                      # grades.csv by student
    status: dict[str, dict[str, Any]]                    # grading-status.json of the lab
    reasons: dict[str, Counter] = field(default_factory=dict)   # test cell -> Counter(reason key)

    @property
    def graded(self) -> list[str]:
        return [s for s, r in self.rows.items() if r.get("status") == "graded"]

    def scores(self) -> list[float]:
        return [float(self.rows[s]["score"]) for s in self.graded]

    def summary(self) -> dict[str, float]:
        xs = sorted(self.scores())
        if not xs:
            return {"students": len(self.rows), "graded": 0}
        q = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else [xs[0]] * 3
        return {"students": len(self.rows), "graded": len(xs), "mean": statistics.fmean(xs),
                "median": statistics.median(xs), "q1": q[0], "q3": q[2], "min": xs[0], "max": xs[-1]}

    def cell_stats(self) -> list[dict[str, Any]]:
        out = []
        for cell, points in self.cells.items():
            got = [float(self.rows[s].get(cell) or 0.0) for s in self.graded]
            full = sum(1 for g in got if points and g >= points - 1e-9)
            out.append({"cell": cell, "points": points, "pass_rate": full / len(got) if got else 0.0,
                        "mean": statistics.fmean(got) if got else 0.0, "failed": len(got) - full})
        return out


def _cells_and_points(out: Path, lab: str) -> tuple[dict[str, float], float]:
    from nbgrader.api import Gradebook

    from .nbgrader_setup import COURSE_ID

    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        assignment = gb.find_assignment(lab)
        cells = {c.name: float(c.max_score) for nb in assignment.notebooks for c in nb.grade_cells}
        return cells, float(assignment.max_score)


def lab_stats(out: str | Path) -> list[LabStats]:
    """The labs graded into ``out`` (usually one)."""
    out = Path(out)
    if not (out / "grades.csv").is_file() or not (out / STATUS_FILE).is_file():
        raise FileNotFoundError(f"{out} is not a grading output (no grades.csv): run gpudl grade LAB SUBMISSIONS "
                                f"--out {out} first")
    status = json.loads((out / STATUS_FILE).read_text())
    rows = read_scores(out / "grades.csv")
    found = []
    for lab, students in sorted(status.items()):
        cells, max_score = _cells_and_points(out, lab)
        mine = {s: rows[s] for s in rows if s in students}
        stats = LabStats(lab, out, max_score, cells, mine, students)
        for sid in stats.graded:
            for note in students[sid].get("notes", []):
                cell, sep, rest = note.partition(": ")
                if sep and cell in cells:
                    stats.reasons.setdefault(cell, Counter())[reason_key(rest)] += 1
        found.append(stats)
    return found


# --- figures ----------------------------------------------------------------------------------

def _png_bytes(fig: Any) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _png(fig: Any) -> str:
    return "data:image/png;base64," + base64.b64encode(_png_bytes(fig)).decode("ascii")


def _histogram(stats: LabStats, *, raw: bool = False) -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    xs = stats.scores()
    bins = min(20, max(5, int(stats.max_score) or 5))
    ax.hist(xs, bins=bins, range=(0, stats.max_score or 1), color="#4c72b0", edgecolor="white")
    s = stats.summary()
    if xs:
        ax.axvline(s["median"], color="#c44e52", lw=2, label=f"median {s['median']:g}")
        ax.axvline(s["mean"], color="#55a868", lw=2, ls="--", label=f"mean {s['mean']:.1f}")
        ax.legend(frameon=False)
    ax.set_xlabel(f"score (of {stats.max_score:g})")
    ax.set_ylabel("students")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))          # students come whole
    ax.set_title(f"{stats.lab}: scores of {len(xs)} graded student(s)")
    return _png_bytes(fig) if raw else _png(fig)


def _pass_rates(stats: LabStats, *, raw: bool = False) -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = stats.cell_stats()
    fig, ax = plt.subplots(figsize=(6.4, 0.3 * len(rows) + 1.0))
    ax.barh([r["cell"] for r in rows][::-1], [100 * r["pass_rate"] for r in rows][::-1], color="#4c72b0")
    ax.set_xlim(0, 100)
    ax.set_xlabel("students with full points (%)")
    ax.set_title(f"{stats.lab}: pass rate per test")
    return _png_bytes(fig) if raw else _png(fig)


def _times(stats: LabStats) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    secs = sorted(float(st.get("seconds") or 0.0) for st in stats.status.values())
    fig, ax = plt.subplots(figsize=(6.4, 2.6))
    ax.hist(secs, bins=min(20, max(3, len(secs))), color="#8172b2", edgecolor="white")
    ax.set_xlabel("grading time per student (s)")
    ax.set_ylabel("students")
    return _png(fig)


# --- the page ---------------------------------------------------------------------------------

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
th{background:#f3f3f3}td.n{text-align:right}img{max-width:100%}h2{border-bottom:2px solid #4c72b0}
.bad{color:#a00}.small{color:#666;font-size:.9em}"""


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    e = html.escape
    out = ["<table><tr>" + "".join(f"<th>{e(str(h))}</th>" for h in head) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td{' class=n' if i in numeric else ''}>{e(str(v))}</td>"
                                   for i, v in enumerate(row)) + "</tr>")
    return "".join(out) + "</table>"


def _similar_pairs(out: Path) -> list[dict[str, Any]]:
    path = out / "similar.json"
    return json.loads(path.read_text()).get("pairs", []) if path.is_file() else []


def _lab_section(stats: LabStats) -> str:
    e = html.escape
    s = stats.summary()
    parts = [f"<h2 id='{e(stats.lab)}'>{e(stats.lab)}</h2>"]
    if s.get("graded"):
        parts.append(f"<p>{s['graded']} of {s['students']} student(s) graded; mean {s['mean']:.2f}, median "
                     f"{s['median']:g}, quartiles {s['q1']:g}–{s['q3']:g}, range {s['min']:g}–{s['max']:g} "
                     f"of {stats.max_score:g} points.</p>")
        parts.append(f"<img alt='score histogram of {e(stats.lab)}' src='{_histogram(stats)}'>")
    else:
        parts.append(f"<p class=bad>None of {s['students']} student(s) could be graded.</p>")
    rows = stats.cell_stats()
    parts.append("<h3>Tests</h3>")
    parts.append(_table(["test", "points", "full points", "mean score", "failed"],
                        [(r["cell"], f"{r['points']:g}", f"{100 * r['pass_rate']:.0f}%", f"{r['mean']:.2f}", r["failed"])
                         for r in rows], numeric=(1, 2, 3, 4)))
    if rows:
        parts.append(f"<img alt='pass rate per test of {e(stats.lab)}' src='{_pass_rates(stats)}'>")
    parts.append("<h3>Why tests failed</h3>")
    reason_rows = [(cell, reason, n) for cell in stats.cells
                   for reason, n in stats.reasons.get(cell, Counter()).most_common(TOP_REASONS)]
    parts.append(_table(["test", "reason (numbers taken out)", "students"], reason_rows, numeric=(2,))
                 if reason_rows else "<p>No test failed.</p>")
    ungraded = [(sid, st.get("reason", "")) for sid, st in sorted(stats.status.items()) if st.get("status") != "graded"]
    parts.append("<h3>Not graded</h3>")
    parts.append(_table(["student", "why"], ungraded) if ungraded else "<p>Every submission was graded.</p>")
    review = [(sid, n.removeprefix("review: ")) for sid, st in sorted(stats.status.items())
              for n in st.get("notes", []) if n.startswith("review:")]
    parts.append("<h3>For review</h3>")
    parts.append(_table(["student", "note"], review) if review else "<p>No code reaching into the grader.</p>")
    late = sorted(sid for sid, st in stats.status.items() if (st.get("lms") or {}).get("late"))
    parts.append("<h3>Late</h3>")
    parts.append(f"<p>{len(late)} submission(s) the LMS marked late: {e(', '.join(late))}</p>" if late
                 else "<p>No submission was marked late.</p>")
    pairs = _similar_pairs(stats.out)
    parts.append("<h3>Similar submissions</h3>")
    parts.append(_table(["student", "student", "similarity", "matched tokens"],
                        [(p["a"], p["b"], f"{100 * p['similarity']:.0f}%", p["tokens"]) for p in pairs[:20]],
                        numeric=(2, 3)) + "<p class=small>From <code>gpudl similar</code>: read the fragments in "
                 "similar.html before drawing any conclusion.</p>"
                 if pairs else "<p>No pair above the threshold (or <code>gpudl similar</code> was not run).</p>")
    secs = [float(st.get("seconds") or 0.0) for st in stats.status.values()]
    if secs:
        parts.append("<h3>Grading time</h3>")
        parts.append(f"<p>{statistics.median(secs):.1f} s per student (median), {max(secs):.1f} s at most, "
                     f"{sum(secs):.0f} s summed over the students (graded side by side, the run itself took "
                     f"less).</p><img alt='grading time per student' src='{_times(stats)}'>")
    return "\n".join(parts)


def _rows_across(all_stats: Sequence[LabStats]) -> tuple[list[str], list[list[Any]]]:
    students = sorted({s for st in all_stats for s in st.rows} | {s for st in all_stats for s in st.status})
    head = ["student"] + [f"{st.lab} {what}" for st in all_stats for what in ("score", "status")] + ["total", "max"]
    rows = []
    for sid in students:
        row: list[Any] = [sid]
        total = 0.0
        for st in all_stats:
            r = st.rows.get(sid)
            score = float(r["score"]) if r and r.get("status") == "graded" else 0.0
            total += score
            row += [f"{score:g}", (r or {}).get("status", "missing")]
        rows.append(row + [f"{total:g}", f"{sum(st.max_score for st in all_stats):g}"])
    return head, rows


def write_report(outs: Sequence[str | Path], dest: str | Path | None = None) -> tuple[Path, Path]:
    """Write report.html and report.csv for the grading outputs ``outs``; return their paths."""
    from .feedback import sanitize_html

    outs = [Path(o) for o in outs]
    if not outs:
        raise ValueError("give at least one grading output (the --out folder of gpudl grade)")
    all_stats = [s for o in outs for s in lab_stats(o)]
    dest = Path(dest) if dest else outs[0]
    dest.mkdir(parents=True, exist_ok=True)
    head, rows = _rows_across(all_stats)
    buf = io.StringIO()
    csv.writer(buf).writerows([head, *rows])
    csv_path = dest / "report.csv"
    csv_path.write_text(buf.getvalue(), encoding="utf-8")
    labs = ", ".join(s.lab for s in all_stats)
    body = [f"<h1>Class report: {html.escape(labs)}</h1>"]
    if len(all_stats) > 1:
        body.append("<h2>Students across labs</h2>" + _table(head, rows))
    body += [_lab_section(s) for s in all_stats]
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>gpudl report: {html.escape(labs)}</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>")
    html_path = dest / "report.html"
    html_path.write_text(sanitize_html(page), encoding="utf-8")
    return html_path, csv_path


def _md_table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]) + "\n"


def example_markdown(stats: LabStats) -> str:
    """The report's summary, tests and failure reasons of one lab as Markdown (what the README shows)."""
    s = stats.summary()
    rows = stats.cell_stats()
    reasons = [(cell, reason, n) for cell in stats.cells
               for reason, n in stats.reasons.get(cell, Counter()).most_common(TOP_REASONS)]
    ungraded = [(sid, st.get("reason", "")) for sid, st in sorted(stats.status.items()) if st.get("status") != "graded"]
    parts = [f"**{stats.lab}**: {s.get('graded', 0)} of {s['students']} student(s) graded; mean {s.get('mean', 0):.2f}, "
             f"median {s.get('median', 0):g}, quartiles {s.get('q1', 0):g}–{s.get('q3', 0):g} of {stats.max_score:g} points.\n",
             _md_table(["test", "points", "full points", "mean score", "failed"],
                       [(r["cell"], f"{r['points']:g}", f"{100 * r['pass_rate']:.0f}%", f"{r['mean']:.2f}", r["failed"])
                        for r in rows]),
             _md_table(["test", "why it failed (numbers taken out)", "students"], reasons) if reasons else "No test failed.\n",
             _md_table(["not graded", "why"], ungraded) if ungraded else "Every submission was graded.\n"]
    return "\n".join(parts)


def write_example(out: str | Path, dest: str | Path) -> list[Path]:
    """``histogram.png``, ``pass_rates.png`` and ``report.md`` of the (first) lab graded into ``out``,
    written into ``dest``; returns their paths."""
    stats = lab_stats(out)[0]
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    files = {"histogram.png": _histogram(stats, raw=True), "pass_rates.png": _pass_rates(stats, raw=True),
             "report.md": example_markdown(stats).encode("utf-8")}
    for name, data in files.items():
        (dest / name).write_bytes(data)
    return [dest / name for name in files]
