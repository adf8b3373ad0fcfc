"""A class of N copies of a lab's solution and one student per mutant, to grade on a GPU machine.

    python3 scripts/gpu_class.py make LAB SUBS [--copies N] [--mutants [EXERCISE ...]] [--release]
    gpudl grade LAB SUBS --out OUT
    python3 scripts/gpu_class.py check LAB OUT

``make`` writes SUBS/solution-NN/LAB.ipynb (what a good student hands in: the release with the
solution cells), SUBS/m-NAME/LAB.ipynb for each mutant of tests/mutants/LAB (those of the named
exercises only, when some are named) and, with ``--release``, SUBS/release/LAB.ipynb (the hand-out
as it is). ``check`` reads OUT/grades.csv: every copy must keep full marks, every mutant must lose
points, the release must score 0; it prints the counts and every exception, and exits 1 on any. It
also notes each mutant whose lost points differ from the tests its header's ``fails:`` names (on a
GPU the cases differ from the CPU's, where the headers are checked).
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]


def make(lab: str, subs: Path, copies: int, with_mutants: bool, exercises: list[str] | None = None,
         release: bool = False) -> None:
    import nbformat

    from conftest import all_mutants, student_copy
    from gpudl import notebooks

    good = student_copy(lab)
    for i in range(copies):
        (subs / f"solution-{i:02d}").mkdir(parents=True, exist_ok=True)
        nbformat.write(good, subs / f"solution-{i:02d}" / f"{lab}.ipynb")
    n = 0
    for m in all_mutants() if with_mutants else []:
        if m.lab != lab or (exercises and m.name.split("__")[0] not in exercises):
            continue
        nb = student_copy(lab)
        cell = notebooks.find_cell(nb, m.cell)
        cell.source = m.planted(cell.source)
        (subs / f"m-{m.name}").mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, subs / f"m-{m.name}" / f"{lab}.ipynb")
        n += 1
    if release:
        (subs / "release").mkdir(parents=True, exist_ok=True)
        (subs / "release" / f"{lab}.ipynb").write_bytes((ROOT / "labs" / lab / f"{lab}.ipynb").read_bytes())
    print(f"{subs}: {copies} copies of the solution, {n} mutants" + (", the release" if release else ""))


def check(lab: str, out: Path) -> int:
    from conftest import all_mutants
    from gpudl_instructor.grades import ROW_COLUMNS

    rows = {r["student"]: r for r in csv.DictReader(open(out / "grades.csv"))}
    fails = {m.name: m.fails for m in all_mutants() if m.lab == lab}
    bad = 0
    copies = [r for s, r in rows.items() if s.startswith("solution-")]
    full = [r for r in copies if r["status"] == "graded" and float(r["score"]) == float(r["max_score"])]
    print(f"{lab}: {len(full)} of {len(copies)} copies of the solution kept full marks")
    for r in copies:
        if r not in full:
            bad += 1
            print(f"  {r['student']}: {r['score']}/{r['max_score']} {r['status']} {r['reason']} {r['notes'][:400]}")
    caught = 0
    top = full[0] if full else None          # a full-marks copy: each test cell's points
    for s, r in sorted(rows.items()):
        if not s.startswith("m-"):
            continue
        name = s[2:]
        if r["status"] != "graded" or float(r["score"]) < float(r["max_score"]):
            caught += 1
            if top is not None and r["status"] == "graded":
                lost = sorted(c for c in fails.get(name, ()) if c in r and float(r[c]) < float(top[c]))
                also = sorted(c for c in r if c not in ROW_COLUMNS and c not in fails.get(name, ())
                              and float(r[c]) < float(top[c]))
                if len(lost) < len(fails.get(name, ())) or also:
                    print(f"  note: mutant {name} lost points in {', '.join(lost + also)} "
                          f"(its header names {', '.join(fails.get(name, ()))})")
        else:
            bad += 1
            print(f"  mutant {name} kept {r['score']}/{r['max_score']} (should lose {', '.join(fails.get(name, ()))})")
    print(f"{lab}: {caught} of {sum(1 for s in rows if s.startswith('m-'))} mutants lost points")
    if "release" in rows:
        r = rows["release"]
        zero = r["status"] == "graded" and float(r["score"]) == 0
        bad += not zero
        print(f"{lab}: the release scored {r['score']}/{r['max_score']}" + ("" if zero else " (should be 0)"))
    return 1 if bad else 0


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("lab")
    m.add_argument("subs", type=Path)
    m.add_argument("--copies", type=int, default=50)
    m.add_argument("--mutants", nargs="*", default=None, metavar="EXERCISE",
                   help="one student per mutant (of these exercises only, when named)")
    m.add_argument("--release", action="store_true", help="one student who hands in the release as it is")
    c = sub.add_parser("check")
    c.add_argument("lab")
    c.add_argument("out", type=Path)
    a = p.parse_args()
    if a.cmd == "make":
        make(a.lab, a.subs, a.copies, a.mutants is not None, a.mutants, a.release)
    else:
        sys.exit(check(a.lab, a.out))


if __name__ == "__main__":
    main()
