"""gpudl grade: students per minute for one student, for a batch, and for one more student.

Makes N correct submissions of a lab (the solution notebook, copied), grades one of them alone and
then all N in one batch, each time the way an instructor does (``gpudl grade`` in a process of its
own: nbgrader, the sandbox and the checker included, feedback too), and reports for each lab the
wall time and students per minute of both, the marginal seconds of one more student ``(T(N) - T(1))
/ (N - 1)`` (and the students per minute that makes), and the students graded at once and per GPU
the grader chose (read from its own report of them), and how many of the copies kept full marks (a
note names each that did not).

A class much larger than the students graded at once keeps every worker busy, so it runs at ``jobs x
60 / s`` students per minute, ``s`` the mean seconds of a student in a batch of at least ``jobs``
(the "class /min" column: the run's start-up, paid once, left out, including the first students'
wait for the server their processes fork from). Where those seconds go is read from the grader's
timings of each student (``grading-status.json``), as medians: ``spawn`` (the student's process,
waiting for the server it forks from at a run's start), ``kernel`` (the sandboxed kernel's start),
``cells`` (running them, checks included), ``nbgrader`` (the rest of autograde), ``feedback``, and
the slowest cell; for a lab that times work, how many timed sections had the device alone and how
many measured sharing it (their lease timed out). ``--batch-only`` skips the class of one. ``--all``
measures every lab; ``--dry-run`` prints the plan (labs, batch, jobs, students per GPU) and grades
nothing. Run it on an idle machine: it measures the machine too.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpudl.table import Table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lab", default="lab01_performance_basics", help="the lab whose solution is graded")
    parser.add_argument("--all", action="store_true", help="every lab, one after the other")
    parser.add_argument("--students", type=int, default=20, help="students in the batch")
    parser.add_argument("--jobs", type=int, help="students graded at once (default: the grader's own)")
    parser.add_argument("--per-gpu", type=int, help="students sharing each GPU (default: the grader's own)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true", help="measure without the sandbox")
    parser.add_argument("--batch-only", action="store_true", help="grade the batch only, not a class of one first")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, grade nothing")


_PLAN = re.compile(r"grading \d+ submission\(s\) of \S+ \([^)]*\), (\d+) at a time(?:, (\d+) per GPU)?")


def _lost(out: Path, lab: str, sid: str, row: dict) -> str:
    """The test cells a graded student lost points in, each with the first line of its error
    (read from the autograded notebook), or "" where there is no notebook."""
    from gpudl import notebooks

    path = out / "autograded" / sid / lab / f"{lab}.ipynb"
    if not lab or not path.is_file():
        return ""
    nb = notebooks.read(path)
    lost = []
    for gid, points in notebooks.graded_cells(nb).items():
        got = row.get(gid)
        if not points or not isinstance(got, float) or got >= points:
            continue
        error = next((o for o in notebooks.find_cell(nb, gid).get("outputs", []) if o.get("output_type") == "error"),
                     None)
        why = f"{error.get('ename')}: {error.get('evalue')}" if error else "no error shown"
        why = re.sub(r"\x1b\[[0-9;]*m", "", why)
        lost.append(f"{gid} {got:g}/{points:g}: {why.splitlines()[0][:300]}")
    return "; ".join(lost)


def _full_marks(out: Path, lab: str = "") -> tuple[int, int, list[str]]:
    """(students with full marks, students, a line for each other one, naming the cells that lost
    points and why) of a graded class: every student is a copy of the solution, so each one short
    of full marks is a fault to report."""
    from ..grades import read_scores

    rows = read_scores(out / "grades.csv")
    short = []
    for sid, r in sorted(rows.items()):
        if r["status"] == "graded" and r["score"] == r["max_score"]:
            continue
        lost = _lost(out, lab, sid, r)
        reason = f"; {r['reason']}" if r["reason"] else ""
        short.append(f"{sid}: {r['score']:g}/{r['max_score']:g} ({r['status']}{reason})" + (f" lost in {lost}" if lost else ""))
    return len(rows) - len(short), len(rows), short


def _timings(out: Path, lab: str, jobs: str) -> dict:
    """The class rate and the medians of where a student's seconds went, from the grader's timings."""
    from ..grades import STATUS_FILE

    students = json.loads((out / STATUS_FILE).read_text()).get(lab, {}).values()
    seconds = [float(st.get("seconds") or 0) for st in students]
    marks = [st.get("timings") or {} for st in students]
    if not seconds or not all(seconds) or not all(marks):
        return {}

    def median(key) -> float:
        return statistics.median(float(key(m)) for m in marks)

    firsts = collections.Counter(next(iter(m.get("slowest_cells") or {"-": 0})) for m in marks)
    slowest = firsts.most_common(1)[0][0]            # the cell slowest for the most students
    # A student's process waits for the server it forks from only at a run's start: left out of the rate.
    row = {"student s": statistics.fmean(s - float(m.get("spawn", 0)) for s, m in zip(seconds, marks))}
    if jobs.isdigit():
        row["class /min"] = int(jobs) * 60 / row["student s"]
    row.update({"spawn s": median(lambda m: m.get("spawn", 0)), "kernel s": median(lambda m: m.get("kernel_start", 0)),
                "cells s": median(lambda m: m.get("cells", 0)),
                "nbgrader s": median(lambda m: m.get("autograde", 0) - m.get("kernel_start", 0) - m.get("cells", 0)),
                "feedback s": median(lambda m: m.get("feedback", 0)),
                "slowest cell": f"{slowest} {median(lambda m: (m.get('slowest_cells') or {}).get(slowest, 0)):.1f} s"})
    alone, shared = (sum(int(m.get(k, 0)) for m in marks) for k in ("timed_alone", "timed_shared"))
    if alone or shared:         # timed sections that had the device alone, and those whose lease timed out
        row["timed alone/shared"] = f"{alone}/{shared}"
    return row


def _grade(lab: str, subs: Path, out: Path, args: argparse.Namespace, unsafe: bool) -> tuple[float, str, str]:
    """(wall seconds, jobs, students per GPU) of one ``gpudl grade`` run."""
    cmd = [sys.executable, "-m", "gpudl_instructor", "grade", lab, str(subs), "--out", str(out), "--secret", "bench"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    if args.per_gpu:
        cmd += ["--per-gpu", str(args.per_gpu)]
    if unsafe:
        cmd.append("--unsafe-no-sandbox")
    start = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if res.returncode != 0:
        raise RuntimeError(f"gpudl grade {lab} failed:\n{(res.stdout + res.stderr)[-2000:]}")
    plan = _PLAN.search(res.stdout)
    return seconds, (plan.group(1) if plan else "?"), ((plan.group(2) or "-") if plan else "?")


def _planned(lab: str, args: argparse.Namespace) -> tuple[int, int]:
    """The jobs and students per GPU ``gpudl grade`` would choose here for ``lab`` (what --dry-run shows)."""
    from gpudl import hardware

    from .. import pipeline

    device = os.environ.get("GPUDL_DEVICE") or hardware.device()
    return pipeline.plan_lab(lab, pipeline._gpus(device), jobs=args.jobs, per_gpu=args.per_gpu)


def _one_lab(lab: str, n: int, solution: Path, args: argparse.Namespace, unsafe: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpudl-bench-grading-") as tmp:
        work = Path(tmp)
        for i in range(n):
            (work / "subs" / f"student{i:03d}").mkdir(parents=True)
            shutil.copy(solution, work / "subs" / f"student{i:03d}" / f"{lab}.ipynb")
        outs = ["outN"]
        one = None
        if not args.batch_only:
            (work / "one" / "student000").mkdir(parents=True)
            shutil.copy(solution, work / "one" / "student000" / f"{lab}.ipynb")
            one, _, _ = _grade(lab, work / "one", work / "out1", args, unsafe)
            outs.insert(0, "out1")
        batch, jobs, per_gpu = _grade(lab, work / "subs", work / "outN", args, unsafe)
        full = [_full_marks(work / out, lab) for out in outs]
        timings = _timings(work / "outN", lab, jobs)
    row = {"lab": lab, "jobs": jobs, "per GPU": per_gpu}
    if one is not None:
        marginal = (batch - one) / (n - 1)
        row.update({"one s": one, "one /min": 60 / one})
    row.update({"batch": n, "batch s": batch, "batch /min": 60 * n / batch})
    if one is not None:
        row.update({"marginal s": marginal, "marginal /min": 60 / marginal if marginal > 0 else float("inf")})
    row.update(timings)
    row.update({"full marks": f"{sum(f[0] for f in full)}/{sum(f[1] for f in full)}",
                "short": [line for f in full for line in f[2]]})
    return row


def run(args: argparse.Namespace) -> Table:
    from ..pipeline import lab_names, repo_root
    from ..sandbox import available

    n = 3 if args.quick else args.students
    if n < 2:
        raise ValueError(f"--students must be 2 or more (a batch beside one student), got {n}")
    root = repo_root()
    labs = lab_names(root) if args.all else [args.lab]
    for lab in labs:
        if not (root / "solutions" / lab / f"{lab}.ipynb").is_file():
            raise ValueError(f"no solutions/{lab}/{lab}.ipynb (labs are: {', '.join(lab_names(root))})")
    unsafe = args.unsafe_no_sandbox or not available()[0]
    where = f"{os.cpu_count()} cores, {'no sandbox' if unsafe else 'sandboxed'}"
    table = Table(f"gpudl grade: {'' if args.batch_only else 'one student, then '}{n} in one batch ({where})")
    if args.dry_run:
        for lab in labs:
            jobs, per_gpu = _planned(lab, args)
            table.rows.append({"lab": lab, "jobs": jobs, "per GPU": per_gpu or "-", "batch": n})
        table.notes.append("dry run: nothing graded")
        return table
    for i, lab in enumerate(labs, 1):
        if len(labs) > 1:
            print(f"[{i}/{len(labs)}] {lab}: one student, then {n}", file=sys.stderr, flush=True)
        row = _one_lab(lab, n, root / "solutions" / lab / f"{lab}.ipynb", args, unsafe)
        table.notes += [f"{lab}: a copy of the solution fell short of full marks: {line}" for line in row.pop("short")]
        table.rows.append(row)
    table.notes.append("one: a class of one student; batch: the class of N; marginal: the wall time one more "
                       "student adds to the batch, (T(N) - T(1)) / (N - 1); jobs and per GPU: what the grader chose; "
                       "full marks: the copies of the solution (the one, then the batch) that kept full marks")
    table.notes.append("student s: a student's mean seconds in the batch, the wait for the server its process forks "
                       "from (spawn, at a run's start) left out; class /min: a large class's rate, jobs x 60 / "
                       "student s (every worker busy; the batch should hold at least jobs students); spawn, kernel, "
                       "cells, nbgrader, feedback, slowest cell: medians of where a student's seconds went")
    if any(str(r["jobs"]).isdigit() and n < int(r["jobs"]) for r in table.rows):
        table.notes.append(f"the batch of {n} is smaller than the jobs: class /min assumes every worker busy and "
                           "overstates a class's rate here")
    return table
