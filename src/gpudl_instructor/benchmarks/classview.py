"""gpudl report and gpudl similar: seconds for a class (targets: 40 students' report < 10 s, 300 students' similarity < 2 min).

Builds a synthetic grading output, without grading anyone: a gradebook with the lab's test cells
and points (nbgrader's own API), scores and failure reasons drawn for each student, and for each
student a graded notebook whose solution cells are the solution's, with names renamed and a
random few exercises replaced by the mutant bank's wrong answers or left blank (as a real class
varies). Then times ``write_report`` on ``--report-students`` students and ``similar`` on
``--similar-students`` students of ``--lab``. Every figure is the wall time of one call on this
machine (run it on an idle one).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
import warnings
from pathlib import Path

from gpudl.table import Table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lab", default="lab06_lstm_bptt", help="the lab whose solution the class varies")
    parser.add_argument("--report-students", type=int, default=40)
    parser.add_argument("--similar-students", type=int, default=300)


def _class(root: Path, lab: str, students: int, out: Path, seed: int = 0) -> None:
    import nbformat
    from nbgrader.api import Gradebook

    from gpudl import notebooks
    from ..course import repo_root  # noqa: F401 - the repository layout this reads
    from ..nbgrader_setup import COURSE_ID
    from ..grades import STATUS_FILE, write_csv

    warnings.filterwarnings("ignore", module="nbgrader")     # its session's autoflush notes, not ours
    warnings.filterwarnings("ignore", category=Warning, message=".*not in session.*")
    rng = random.Random(seed)
    released = nbformat.read(str(root / "labs" / lab / f"{lab}.ipynb"), as_version=4)
    solution = nbformat.read(str(root / "solutions" / lab / f"{lab}.ipynb"), as_version=4)
    cells = notebooks.graded_cells(released)
    mutants = {}
    for path in sorted((root / "tests" / "mutants" / lab).glob("*.py")):
        text = path.read_text()
        cell = re.search(r"^# cell: (\S+)", text, re.M)
        if cell and "# replace:" not in text:
            body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("# "))
            mutants.setdefault(cell[1], []).append(body)
    out.mkdir(parents=True, exist_ok=True)
    status: dict[str, dict] = {}
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=COURSE_ID) as gb:
        gb.add_assignment(lab)
        gb.add_notebook(lab, lab)
        for name, points in cells.items():
            gb.add_grade_cell(name, lab, lab, max_score=points, cell_type="code")
        for i in range(students):
            sid = f"student-{i:03d}"
            gb.add_student(sid)
            gb.add_submission(lab, sid)
            nb = nbformat.from_dict(solution)
            notes = []
            for cell in nb.cells:
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                    roll = rng.random()
                    if roll < 0.15 and gid in mutants:
                        cell.source = rng.choice(mutants[gid])
                    elif roll < 0.25:
                        cell.source = notebooks.find_cell(released, gid).source
                    else:
                        cell.source = re.sub(r"\b([a-z])\b", lambda m: f"{m[1]}{i}", cell.source)
            for name, points in cells.items():
                grade = gb.find_grade(name, lab, lab, sid)
                full = rng.random() > 0.2
                grade.auto_score = points if full else 0.0
                if not full:
                    notes.append(f"{name}: GradingError: your result is {rng.randint(1, 99)}, expected "
                                 f"{rng.randint(100, 200)}: off by a factor of 2: an FMA is 2 FLOPs")
            gb.db.commit()
            status[sid] = {"status": "graded", "reason": "", "notes": notes, "max_score": sum(cells.values()),
                           "name": sid, "seconds": round(rng.uniform(3, 30), 1), "lms": {}}
            folder = out / "autograded" / sid / lab
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(folder / f"{lab}.ipynb"))
    (out / STATUS_FILE).write_text(json.dumps({lab: status}))
    write_csv(out / "grades.csv", lab, out)


def run(args: argparse.Namespace) -> Table:
    from ..course import repo_root
    from ..report import write_report
    from ..similar import similar

    root = repo_root()
    report_n = 5 if args.quick else args.report_students
    similar_n = 10 if args.quick else args.similar_students
    table = Table(f"class view of {args.lab}: report and similarity")
    with tempfile.TemporaryDirectory(prefix="gpudl-bench-class-") as tmp:
        for what, n, target in (("report", report_n, 10.0), ("similar", similar_n, 120.0)):
            out = Path(tmp) / what
            _class(root, args.lab, n, out)
            start = time.perf_counter()
            if what == "report":
                write_report([out])
            else:
                pairs = similar(out, root=root)
            seconds = time.perf_counter() - start
            table.rows.append({"command": f"gpudl {what}", "students": n, "seconds": seconds,
                               "target s": target if n == (40 if what == "report" else 300) else None,
                               "pairs flagged": len(pairs) if what == "similar" else None})
    table.notes.append("Targets: the report of 40 students in under 10 s, similarity over 300 students in under "
                       "2 minutes, on the 2-core machine.")
    return table
