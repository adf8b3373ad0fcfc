"""gpudl grade: seconds for one student, for a batch, and the marginal cost of one more student.

Makes N correct submissions of a lab (the solution notebook, copied), grades one of them alone
and then all N in one batch, each time the way an instructor does (``gpudl grade`` in a process
of its own: nbgrader, the sandbox and the checker included, feedback too), and reports the
wall time of both, the marginal seconds of one more student ``(T(N) - T(1)) / (N - 1)`` and
the students per minute of the batch. Run it on an idle machine: it measures the machine too.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpudl.table import Table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lab", default="lab01_performance_basics", help="the lab whose solution is graded")
    parser.add_argument("--students", type=int, default=20, help="students in the batch")
    parser.add_argument("--jobs", type=int, help="students graded at once (default: the grader's own)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true", help="measure without the sandbox")


def _grade(lab: str, subs: Path, out: Path, jobs: int | None, unsafe: bool) -> float:
    cmd = [sys.executable, "-m", "gpudl_instructor", "grade", lab, str(subs), "--out", str(out), "--secret", "bench"]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    if unsafe:
        cmd.append("--unsafe-no-sandbox")
    start = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if res.returncode != 0:
        raise RuntimeError(f"gpudl grade failed:\n{(res.stdout + res.stderr)[-2000:]}")
    return seconds


def run(args: argparse.Namespace) -> Table:
    from ..pipeline import repo_root

    from ..sandbox import available

    n = 3 if args.quick else max(2, args.students)
    unsafe = args.unsafe_no_sandbox or not available()[0]
    root = repo_root()
    solution = root / "solutions" / args.lab / f"{args.lab}.ipynb"
    if not solution.is_file():
        raise ValueError(f"no solutions/{args.lab}/{args.lab}.ipynb")
    table = Table(f"gpudl grade {args.lab}: one student, then {n} in one batch")
    with tempfile.TemporaryDirectory(prefix="gpudl-bench-grading-") as tmp:
        work = Path(tmp)
        for i in range(n):
            (work / "subs" / f"student{i:03d}").mkdir(parents=True)
            shutil.copy(solution, work / "subs" / f"student{i:03d}" / f"{args.lab}.ipynb")
        (work / "one" / "student000").mkdir(parents=True)
        shutil.copy(solution, work / "one" / "student000" / f"{args.lab}.ipynb")
        one = _grade(args.lab, work / "one", work / "out1", args.jobs, unsafe)
        batch = _grade(args.lab, work / "subs", work / "outN", args.jobs, unsafe)
    marginal = (batch - one) / (n - 1)
    table.rows.append({"students": 1, "wall s": one, "students/min": 60 / one})
    table.rows.append({"students": n, "wall s": batch, "students/min": 60 * n / batch})
    table.notes.append(f"marginal cost of one more student: {marginal:.2f} s of wall time "
                       f"({os.cpu_count()} cores, jobs={args.jobs or 'default'}, "
                       f"{'no sandbox' if unsafe else 'sandboxed'})")
    return table
