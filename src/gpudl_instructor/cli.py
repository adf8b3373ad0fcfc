"""The ``gpudl`` command of the instructor's repository: the course edition's commands and these.

    gpudl handout DIR [--root R] [--answers LAB ...]
                                    write the student hand-out: labs, lectures, the course edition
    gpudl release [LAB]             regenerate labs/ from solutions/ and the visible cases' expected values
    gpudl grade LAB SUBMISSIONS --out DIR
                                    grade a folder of student folders or an LMS zip
    gpudl formgrader DIR            nbgrader's formgrader on a grading output, for instructors
    gpudl run-labs --device cuda --report DIR
                                    execute every course notebook and lab, grade the solutions,
                                    and report the units' measurements
    gpudl grade LAB SUBMISSIONS --out DIR --shard K/N, then gpudl merge OUT_1 ... OUT_N --out DIR
                                    a class split across machines (a Slurm array, a CI matrix)
    gpudl sweep LAB ... | --all [--students 300]
                                    the solution's hidden checks under many students' seeds
    gpudl hunt [LAB ...]            look for graded answers in the course edition (what handout runs)
    gpudl report OUT [OUT ...]      the class report: scores, tests, failure reasons, review notes, time
    gpudl similar OUT               similar pairs of submissions (copydetect), with the matched fragments
    gpudl export OUT --lms canvas|moodle
                                    the grades as the LMS's gradebook import reads them
"""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from gpudl import cli as course_cli
from gpudl.cli import doctor, find_alembic  # noqa: F401 - the instructor's doctor is the course's with more checks


def instructor_requirements(pyproject: Path | None = None) -> dict[str, str]:
    """{distribution: requirement} of pyproject.toml's ``instructor`` extra: what grading's
    feedback pages, the class report and ``gpudl similar`` need beyond the course edition."""
    import re
    import tomllib

    path = pyproject or Path(__file__).resolve().parents[2] / "pyproject.toml"
    if path.exists():
        extra = tomllib.loads(path.read_text())["project"]["optional-dependencies"]["instructor"]
    else:                               # installed from a wheel: its metadata
        import importlib.metadata

        extra = [r.split(";")[0].strip() for r in importlib.metadata.requires("gpudl") or ()
                 if re.search(r"extra\s*==\s*.instructor.", r)]
    return {re.match(r"[A-Za-z0-9_.-]+", req).group(0): req for req in extra}


def _doctor_extra() -> list[str]:
    """What the instructor's doctor checks beyond the course edition's: the instructor's
    distributions, the sandbox and the repository."""
    from gpudl.cli import check_distributions

    from .sandbox import available
    problems = check_distributions({
        dist: f"pip install '{req}' (pyproject.toml's instructor extra: grading's feedback and class report or "
              "`gpudl similar` use it; a GPU machine without network: README, \"For GPU runners\")"
        for dist, req in instructor_requirements().items()})
    ok, why = available()
    if ok:
        print("sandbox     bubblewrap works here: `gpudl grade` runs each student's kernel in a sandbox")
    else:
        print(f"sandbox     NOT AVAILABLE: {why}\n            (`gpudl grade` refuses to run student code here unless told "
              "--unsafe-no-sandbox; labs and lectures work without it)")
    try:
        from .pipeline import lab_names, repo_root
        root = repo_root()
        print(f"course      {root}: labs {', '.join(lab_names(root)) or '(none)'}")
    except FileNotFoundError:
        print("course      (not inside the course repository)")
    except ImportError as exc:        # nbformat & co. missing: already listed above
        print(f"course      (cannot read it: {exc})")
    return problems


def instructor_doctor(args: argparse.Namespace) -> int:
    args.doctor_extra = [_doctor_extra]
    return doctor(args)


def check_lab_name(lab: str) -> None:
    """A lab name that is not in solutions/ ends in one line naming the nearest one."""
    from .pipeline import lab_names
    names = lab_names()
    if lab in names:
        return
    same_number = [n for n in names if n.split("_")[0] == lab.split("_")[0]]
    near = same_number or difflib.get_close_matches(lab, names, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]}?" if near else ""
    raise FileNotFoundError(f"no lab named {lab!r} in solutions/{hint} (labs are: {', '.join(names)})")


def release(args: argparse.Namespace) -> int:
    from .pipeline import release as do_release
    if args.lab:
        check_lab_name(args.lab)
    for path in do_release(args.lab or None):
        print(f"released {path}")
    return 0


def grade(args: argparse.Namespace) -> int:
    from .pipeline import grade as do_grade
    check_lab_name(args.lab)
    if not Path(args.submissions).exists():
        raise FileNotFoundError(f"{args.submissions} does not exist: give a folder of student folders "
                                "(alice/LAB.ipynb, ...) or the zip of submissions from the LMS")
    limits = {"memory_bytes": int(args.memory_gb * 2**30)} if args.memory_gb else None
    from .shards import parse_shard
    shard = parse_shard(args.shard) if args.shard else None
    results = do_grade(args.lab, args.submissions, args.out, secret=args.secret, jobs=args.jobs,
                       cell_timeout=args.cell_timeout, student_timeout=args.student_timeout,
                       accept_renamed=args.accept_renamed, feedback=not args.no_feedback,
                       sandbox=not args.unsafe_no_sandbox, limits=limits, shard=shard, per_gpu=args.per_gpu)
    graded = sum(r.graded for r in results)
    try:
        from .report import write_report
        write_report([args.out])
    except Exception as exc:  # noqa: BLE001 - the grades are written; the report can be made again
        print(f"the class report could not be written ({exc}): run gpudl report {args.out}")
    print(f"\n{graded} of {len(results)} graded; report in {Path(args.out) / 'report.html'}; grades in {Path(args.out) / 'grades.csv'}, "
          f"feedback in {Path(args.out) / 'feedback'}, gradebook {Path(args.out) / 'gradebook.db'}")
    return 0


def formgrader(args: argparse.Namespace) -> int:
    from . import formgrader as fg
    return fg.serve_formgrader(Path(args.out), port=args.port, no_browser=args.no_browser,
                               token=args.token, extra=args.extra)


def handout(args: argparse.Namespace) -> int:
    from .handout import handout as do_handout
    dest = do_handout(args.dir, args.root, force=args.force, answers=args.answers or ())
    print(f"hand-out written to {dest}: give students this folder (or a zip of it); "
          "they run `make lab` in it (see its README.md)")
    return 0


def hunt(args: argparse.Namespace) -> int:
    from .hunt import hunt as do_hunt, report
    findings = do_hunt(args.labs or None, root=Path(args.root) if args.root else None, jobs=args.jobs,
                       progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(report(findings))
    return 1 if findings else 0


def merge(args: argparse.Namespace) -> int:
    from .shards import merge as join
    dest = join(args.outs, args.out)
    print(f"merged {len(args.outs)} shard(s) into {dest}: grades.csv, gradebook.db, feedback/, report.html")
    return 0


def sweep(args: argparse.Namespace) -> int:
    from .pipeline import lab_names
    from .sweep import sweep as run_sweep
    labs = lab_names() if args.all else args.labs
    if not labs:
        raise ValueError("name the labs to sweep, or pass --all")
    for lab in labs:
        check_lab_name(lab)
    lost = 0
    for lab in labs:
        result = run_sweep(lab, args.students, secret=args.secret)
        print("\n".join(result.lines()), flush=True)
        lost += result.students - result.full
    return 1 if lost else 0


def report(args: argparse.Namespace) -> int:
    from .report import write_report
    page, table = write_report(args.outs, args.dest)
    print(f"report: {page} and {table}")
    return 0


def similar(args: argparse.Namespace) -> int:
    from .similar import similar as find
    pairs = find(args.out, lab=args.lab, references=args.reference or (), threshold=args.threshold,
                 root=Path(args.root) if args.root else None)
    for p in pairs[:20]:
        print(f"{p.similarity:5.0%}  {p.a} & {p.b}  ({p.tokens} tokens)")
    print(f"{len(pairs)} pair(s) at or above {args.threshold:.0%}; fragments side by side in "
          f"{Path(args.out) / 'similar.html'}")
    return 0


def export(args: argparse.Namespace) -> int:
    from .lms import export as write
    done = write(args.out, args.lms, args.dest, late_penalty=args.late_penalty)
    print(f"{done.rows} grade(s) for {args.lms} in {done.path}"
          + (f"; late: {', '.join(done.late)}" if done.late else ""))
    if done.without_id:
        print(f"NOT exported (no {args.lms} id in their submission's file name: enter by hand): "
              f"{', '.join(done.without_id)}", file=sys.stderr)
    return 0


def run_labs(args: argparse.Namespace) -> int:
    from gpudl.hardware import device
    from .runlabs import run_labs as do_run
    return do_run(device=args.device or device(), report=Path(args.report), only=args.only, timeout=args.timeout,
                  benchmarks=not args.no_bench, root=Path(args.root) if args.root else None)


def parser() -> argparse.ArgumentParser:
    """The course edition's commands (with the instructor's doctor) and the instructor's."""
    parser, sub = course_cli.parser()
    sub.choices["doctor"].set_defaults(fn=instructor_doctor)

    p = sub.add_parser("handout", help="write the student hand-out (labs, lectures, the course edition; no answers)",
                       description="Write what students get into DIR: labs/, course/, the course edition of the "
                                   "package (src/gpudl), its pyproject.toml, a Makefile and a README. Runs from "
                                   "anywhere with --root; refuses while an answer can be found in what it would "
                                   "write (the same hunt as `gpudl hunt`).")
    p.add_argument("dir", help="a new folder for the hand-out")
    p.add_argument("--root", help="the course repository (default: the one around the current folder)")
    p.add_argument("--force", action="store_true", help="replace the folder if it exists")
    p.add_argument("--answers", nargs="+", metavar="LAB",
                   help="closed labs whose references and solution notebook the hand-out adds (answers/LAB/)")
    p.set_defaults(fn=handout)

    p = sub.add_parser("formgrader", help="nbgrader's formgrader on a grading output (instructors)")
    p.add_argument("out", help="the --out folder of gpudl grade")
    p.add_argument("--port", type=int)
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--token", help="the server's access token (default: JupyterLab makes one)")
    p.set_defaults(fn=formgrader)

    p = sub.add_parser("release", help="regenerate labs/ from solutions/, with the visible cases' expected values")
    p.add_argument("lab", nargs="?", help="one lab (default: all)")
    p.set_defaults(fn=release)

    p = sub.add_parser("grade", help="grade a folder of submissions or an LMS zip")
    p.add_argument("lab", help="the lab's name, e.g. lab01_performance_basics")
    p.add_argument("submissions", help="a folder of student folders, or a zip from the LMS")
    p.add_argument("--out", required=True, help="where the gradebook, feedback and grades.csv go")
    p.add_argument("--secret", help="the secret behind hidden tests (default: $GPUDL_SECRET or .gpudl-secret)")
    p.add_argument("--jobs", type=int, help="students graded at once (default: up to the cores and the memory)")
    p.add_argument("--per-gpu", type=int, metavar="N",
                   help="students sharing each GPU (default: as many as its memory and the cores allow; timed checks "
                        "still get the GPU alone); 1: each student has a GPU alone")
    p.add_argument("--cell-timeout", type=int, help="seconds per cell")
    p.add_argument("--student-timeout", type=float, default=1200, help="seconds per student")
    p.add_argument("--accept-renamed", action="store_true", help="grade a lone notebook under another name")
    p.add_argument("--no-feedback", action="store_true")
    p.add_argument("--memory-gb", type=float, help="memory limit of each student's kernel (default 6)")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run student code WITHOUT the sandbox (only where bubblewrap cannot work and you trust "
                        "every submission)")
    p.add_argument("--shard", metavar="K/N",
                   help="grade only shard K of N of the class (the same split on every machine); join with gpudl merge")
    p.set_defaults(fn=grade)

    p = sub.add_parser("merge", help="join the outputs of gpudl grade --shard K/N into one")
    p.add_argument("outs", nargs="+", metavar="OUT_K", help="the shards' --out folders")
    p.add_argument("--out", required=True, help="a new folder for the whole class")
    p.set_defaults(fn=merge)

    p = sub.add_parser("sweep", help="grade the solution's hidden checks under many students' seeds",
                       description="Run each lab's solution once in this process, then its hidden checks under the "
                                   "seeds of N student ids (student0000, ...); report how many keep full marks and "
                                   "every seed that loses a point, with the check's message. Exit status 1 if any.")
    p.add_argument("labs", nargs="*", help="the labs (or --all)")
    p.add_argument("--all", action="store_true", help="every lab")
    p.add_argument("--students", type=int, default=300, help="student ids, hence seeds, per lab (default 300)")
    p.add_argument("--secret", help="the secret the seeds derive from (default: $GPUDL_SECRET or .gpudl-secret)")
    p.set_defaults(fn=sweep)

    p = sub.add_parser("hunt", help="look for graded answers in the course edition (gpudl handout runs it)")
    p.add_argument("labs", nargs="*", help="labs to hunt in (default: all)")
    p.add_argument("--root", help="the course repository (default: the one around the current folder)")
    p.add_argument("--jobs", type=int, help="labs hunted at once (default: one per CPU)")
    p.set_defaults(fn=hunt)

    p = sub.add_parser("report", help="the class report of grading outputs (report.html, report.csv)")
    p.add_argument("outs", nargs="+", metavar="OUT", help="the --out folders of gpudl grade (one per lab)")
    p.add_argument("--dest", help="where report.html and report.csv go (default: the first OUT)")
    p.set_defaults(fn=report)

    p = sub.add_parser("similar", help="similar pairs of submissions in a grading output (copydetect)")
    p.add_argument("out", help="the --out folder of gpudl grade")
    p.add_argument("--reference", action="append", metavar="DIR",
                   help="past terms' submissions or grading outputs to compare with (repeatable)")
    p.add_argument("--threshold", type=float, default=0.5, help="share of one side's own code (default 0.5)")
    p.add_argument("--lab", help="the lab, when OUT holds several")
    p.add_argument("--root", help="the course repository (default: the one around the current folder)")
    p.set_defaults(fn=similar)

    p = sub.add_parser("export", help="grades as Canvas's or Moodle's import reads them")
    p.add_argument("out", help="the --out folder of gpudl grade")
    p.add_argument("--lms", required=True, choices=("canvas", "moodle"))
    p.add_argument("--dest", help="the CSV to write (default: OUT/LAB-LMS.csv)")
    p.add_argument("--late-penalty", type=float, default=0.0,
                   help="fraction of the score taken off a submission the LMS marked late (default 0: none)")
    p.set_defaults(fn=export)

    p = sub.add_parser("run-labs", help="execute every notebook, grade the solutions, report")
    p.add_argument("--device", choices=("cpu", "cuda"),
                   help="default: cuda when torch sees a GPU, else cpu (GPU runners pass --device cuda)")
    p.add_argument("--report", default="gpu-report", help="folder for report.json, report.md and plots")
    p.add_argument("--only", action="append", help="only notebooks whose name contains this (repeatable)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per notebook")
    p.add_argument("--no-bench", action="store_true", help="skip the performance table")
    p.add_argument("--root", help="the course repository (default: the one around the current directory)")
    p.set_defaults(fn=run_labs)
    return parser


def main(argv: list[str] | None = None) -> int:
    return course_cli.run(parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
