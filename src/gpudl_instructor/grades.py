"""A grading output's record of its students: ``grading-status.json`` and ``grades.csv``.

``STATUS_FILE`` keeps, per lab and student, what the gradebook does not: graded or not and why,
the notes (each failing test's reason, repairs, ``review:`` lines), the name the LMS gave, the
LMS's id and late mark, and the seconds it took. ``write_csv`` rebuilds ``grades.csv`` from the
gradebook and that file; ``read_scores`` reads it back. The pipeline, the report, the LMS export
and the merge of shards all go through here.

Public names: ``STATUS_FILE``, ``update_status``, ``write_csv``, ``read_scores``.
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any, Sequence

from .nbgrader_setup import COURSE_ID

STATUS_FILE = "grading-status.json"     # per student: status, reason, notes (kept across runs)


def update_status(out: Path, lab: str, results: Sequence[Any]) -> None:
    """Record each result (a ``pipeline.StudentResult``) in the status file, keeping other students'."""
    path = out / STATUS_FILE
    try:
        status = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        status = {}
    mine = status.setdefault(lab, {})
    for r in results:
        mine[r.student] = {"status": "graded" if r.graded else "not graded", "reason": r.reason,
                           "notes": r.notes, "max_score": r.max_score, "name": r.name,
                           "seconds": round(r.seconds, 2), "lms": r.lms,
                           "timings": {**r.marks, "slowest_cells": r.slowest_cells}}
    _atomic_write(path, json.dumps(status, indent=1))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# grades.csv's columns before the one column per graded cell
ROW_COLUMNS = ("student", "status", "score", "max_score", "percent", "reason", "notes", "late", "lms_id")


def write_csv(path: Path, lab: str, out: Path) -> None:
    """``grades.csv`` from the gradebook and the status of every student graded so far, one row
    each, written atomically (a crash leaves the previous file)."""
    from nbgrader.api import Gradebook, MissingEntry

    status = {}
    if (out / STATUS_FILE).exists():
        status = json.loads((out / STATUS_FILE).read_text()).get(lab, {})
    rows = []
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        assignment = gb.find_assignment(lab)
        cells = [c.name for nb in assignment.notebooks for c in nb.grade_cells]
        max_score = float(assignment.max_score)
        students = sorted({s.id for s in gb.students} | set(status))
        for sid in students:
            st = status.get(sid, {})
            scores: dict[str, float] = {}
            graded = False
            try:
                snb = gb.find_submission_notebook(lab, lab, sid)
                scores = {g.name: float(g.score or 0.0) for g in snb.grades}
                graded = st.get("status", "graded") == "graded"
            except MissingEntry:
                if not st:
                    continue            # a student of another lab
            score = sum(scores.values()) if graded else 0.0
            pct = 100.0 * score / max_score if max_score else 0.0
            lms = st.get("lms") or {}
            rows.append([sid, "graded" if graded else "not graded", f"{score:g}", f"{max_score:g}", f"{pct:.1f}",
                         st.get("reason", ""), " | ".join(st.get("notes", [])),
                         "late" if lms.get("late") else "", f"{lms['lms']}:{lms['id']}" if lms.get("id") else "",
                         *[f"{scores.get(c, 0.0):g}" for c in cells]])
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([*ROW_COLUMNS, *cells])
    w.writerows(rows)
    _atomic_write(path, buf.getvalue())


def read_scores(path: Path) -> dict[str, dict[str, Any]]:
    """grades.csv as {student: row} (numbers as floats), for tests and reports."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for row in rows:
        parsed: dict[str, Any] = dict(row)
        for k, v in row.items():
            if k not in ("student", "status", "reason", "notes", "late", "lms_id"):
                try:
                    parsed[k] = float(v)
                except ValueError:
                    pass
        out[row["student"]] = parsed
    return out
