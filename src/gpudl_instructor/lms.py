"""Grades the LMS imports: ``gpudl export OUT --lms canvas|moodle [--late-penalty P]``.

Each file follows the import layout of its LMS, keyed by the LMS's own ids, which ``gpudl grade``
keeps from the names of the submission zip's files (``gpudl_instructor.submissions``):

- **Canvas** (Grades > Import): the gradebook CSV's columns ``Student, ID, SIS User ID, SIS Login
  ID, Section`` then one column per assignment, headed by its name; a ``Points Possible`` row
  after the header. ``ID`` is the Canvas user id of ``name_USERID_SUBMISSIONID_file``. Canvas
  matches rows by ``ID`` and creates the assignment column when no assignment has its name.
- **Moodle** (the assignment's "Upload grading worksheet"): the offline grading worksheet's
  columns ``Identifier, Full name, Email address, Status, Grade, Maximum Grade, Grade can be
  changed, Last modified (submission), Last modified (grade), Feedback comments``, where
  ``Identifier`` is ``Participant N`` with N the participant id of the folder
  ``Full Name_N_assignsubmission_file_``. Moodle reads ``Identifier``, ``Grade`` and
  ``Feedback comments``.

A student without an LMS id (graded from a plain folder) cannot be matched: they are listed, on
stderr and in the returned ``Export``, never dropped silently. A submission the LMS marked late
keeps its score unless ``late_penalty`` is given: the fraction of the score taken off (0.1 takes
10% off; the feedback comment says so).

Public names: ``export``, ``Export``, ``LMS``.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from .grades import STATUS_FILE, read_scores

LMS = ("canvas", "moodle")
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                  "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


@dataclass
class Export:
    """What ``export`` wrote, and who could not be written."""

    path: Path
    rows: int = 0
    without_id: list[str] = field(default_factory=list)
    late: list[str] = field(default_factory=list)


def _status(out: Path) -> dict[str, dict]:
    path = out / STATUS_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def _score(row: dict, late: bool, penalty: float) -> tuple[float, str]:
    score = float(row.get("score") or 0.0) if row.get("status") == "graded" else 0.0
    if late and penalty:
        return round(score * (1.0 - penalty), 4), f"late: {penalty:.0%} taken off ({score:g} before)"
    return score, "late (no penalty applied)" if late else ""


def export(out: str | Path, lms: str, dest: str | Path | None = None, *, late_penalty: float = 0.0) -> Export:
    """Write the grades of the grading output ``out`` as ``lms`` imports them; return what was written."""
    out = Path(out)
    if lms not in LMS:
        raise ValueError(f"--lms must be one of {', '.join(LMS)}, got {lms!r}")
    if not 0.0 <= late_penalty <= 1.0:
        raise ValueError(f"--late-penalty is the fraction taken off a late score, between 0 and 1; got {late_penalty}")
    grades = out / "grades.csv"
    if not grades.is_file():
        raise FileNotFoundError(f"{out} has no grades.csv: run gpudl grade LAB SUBMISSIONS --out {out} first")
    rows = read_scores(grades)
    status = _status(out)
    if len(status) != 1:
        raise ValueError(f"{out} holds {len(status)} labs' grades; export one lab's output at a time")
    lab, students = next(iter(status.items()))
    dest = Path(dest) if dest else out / f"{lab}-{lms}.csv"
    result = Export(dest)
    buf = io.StringIO()
    w = csv.writer(buf)
    if lms == "canvas":
        w.writerow(CANVAS_COLUMNS + [lab])
        max_score = max((float(r.get("max_score") or 0) for r in rows.values()), default=0.0)
        w.writerow(["Points Possible", "", "", "", "", f"{max_score:g}"])
    else:
        w.writerow(MOODLE_COLUMNS)
    for sid in sorted(rows):
        row, st = rows[sid], students.get(sid, {})
        info = st.get("lms") or {}
        if not info.get("id") or info.get("lms") != lms:
            result.without_id.append(sid)
            continue
        late = bool(info.get("late"))
        if late:
            result.late.append(sid)
        score, note = _score(row, late, late_penalty)
        name = st.get("name") or sid
        if lms == "canvas":
            w.writerow([name, info["id"], "", "", "", f"{score:g}"])
        else:
            comment = "; ".join(x for x in (note, "" if row.get("status") == "graded" else row.get("reason", "")) if x)
            w.writerow([f"Participant {info['id']}", name, "", "", f"{score:g}", f"{float(row.get('max_score') or 0):g}",
                        "Yes", "", "", comment])
        result.rows += 1
    dest.write_text(buf.getvalue(), encoding="utf-8")
    return result
