"""A class split across machines: ``gpudl grade ... --shard K/N`` and ``gpudl merge``.

``--shard K/N`` grades the submissions whose student id hashes to K (of 1..N): the same split on
every machine for the same submissions, every submission in exactly one shard, no queue or
daemon of ours (the cluster's scheduler starts the N jobs: a Slurm job array, a GitHub Actions
matrix). Each shard's ``OUT`` records what it was (``shard.json``: the lab, K, N, the students of
the whole class and of this shard).

``gpudl merge OUT_1 ... OUT_N --out OUT`` joins the shards into one output: the gradebook (every
student's grades and comments, through nbgrader's API, so shards made on different machines
merge), the status behind ``grades.csv``, the graded notebooks and the feedback pages, then
``grades.csv`` and the class report made anew; the result equals grading the class in one run.
It refuses a shard given twice, shards of different labs or splits, a student graded in two
shards, and names every shard and submission that is missing.

Public names: ``parse_shard``, ``in_shard``, ``MANIFEST``, ``write_manifest``, ``merge``.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Sequence

MANIFEST = "shard.json"


def parse_shard(text: str) -> tuple[int, int]:
    """"K/N" -> (K, N), 1 <= K <= N."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes K/N (this machine's shard K of N, e.g. 2/4), got {text!r}") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text}: K must be between 1 and N")
    return k, n


def in_shard(student: str, k: int, n: int) -> bool:
    """Whether ``student`` belongs to shard ``k`` of ``n`` (a hash of the id: stable everywhere)."""
    digest = int.from_bytes(hashlib.sha256(student.encode()).digest()[:8], "big")
    return digest % n == k - 1


def write_manifest(out: Path, lab: str, k: int, n: int, mine: Sequence[str], everyone: Sequence[str]) -> None:
    (out / MANIFEST).write_text(json.dumps({"lab": lab, "shard": k, "of": n, "students": sorted(mine),
                                            "class": sorted(everyone)}, indent=1))


def _manifests(outs: Sequence[Path]) -> list[dict]:
    found = []
    for out in outs:
        path = Path(out) / MANIFEST
        if not path.is_file():
            raise FileNotFoundError(f"{out} is not a shard's output (no {MANIFEST}): grade with --shard K/N")
        found.append({**json.loads(path.read_text()), "out": Path(out)})
    return found


def _check(manifests: list[dict]) -> tuple[str, int]:
    labs = {m["lab"] for m in manifests}
    ns = {m["of"] for m in manifests}
    if len(labs) != 1 or len(ns) != 1:
        raise ValueError("the shards are of different labs or splits: "
                         + ", ".join(f"{m['out']} ({m['lab']} {m['shard']}/{m['of']})" for m in manifests))
    lab, n = labs.pop(), ns.pop()
    seen: dict[int, Path] = {}
    for m in manifests:
        if m["shard"] in seen:
            raise ValueError(f"shard {m['shard']}/{n} is given twice: {seen[m['shard']]} and {m['out']}")
        seen[m["shard"]] = m["out"]
    owner: dict[str, Path] = {}
    for m in manifests:
        for s in m["students"]:
            if s in owner:
                raise ValueError(f"{s} was graded in two shards: {owner[s]} and {m['out']}")
            owner[s] = m["out"]
    missing_shards = sorted(set(range(1, n + 1)) - set(seen))
    if missing_shards:
        missing = sorted(s for s in manifests[0]["class"] if s not in owner)
        raise ValueError(f"shard(s) {', '.join(f'{k}/{n}' for k in missing_shards)} missing: not graded: "
                         f"{', '.join(missing) or '(no one)'}")
    return lab, n


def _copy_student(main_gb, shard_gb, lab: str, sid: str) -> None:
    from nbgrader.api import MissingEntry

    student = shard_gb.find_student(sid)
    main_gb.update_or_create_student(sid, first_name=student.first_name, last_name=student.last_name)
    try:
        theirs = shard_gb.find_submission(lab, sid)
    except MissingEntry:
        return
    try:
        main_gb.remove_submission(lab, sid)
    except MissingEntry:
        pass
    mine = main_gb.add_submission(lab, sid, timestamp=theirs.timestamp)
    for nb in theirs.notebooks:
        for grade in nb.grades:
            g = main_gb.find_grade(grade.name, nb.name, lab, sid)
            g.auto_score, g.manual_score, g.extra_credit = grade.auto_score, grade.manual_score, grade.extra_credit
            g.needs_manual_grade = grade.needs_manual_grade
        for comment in nb.comments:
            c = main_gb.find_comment(comment.name, nb.name, lab, sid)
            c.auto_comment, c.manual_comment = comment.auto_comment, comment.manual_comment
    main_gb.db.commit()
    del mine


def merge(outs: Sequence[str | Path], dest: str | Path) -> Path:
    """Join the shard outputs ``outs`` into ``dest`` (a new folder); return it."""
    from nbgrader.api import Gradebook

    from .nbgrader_setup import COURSE_ID
    from .grades import STATUS_FILE, write_csv

    outs = [Path(o).resolve() for o in outs]
    dest = Path(dest).resolve()
    if dest in outs:
        raise ValueError(f"--out {dest} is one of the shards: merge into a new folder")
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty: merge into a new folder")
    manifests = sorted(_manifests(outs), key=lambda m: m["shard"])
    lab, n = _check(manifests)
    first = manifests[0]["out"]
    shutil.copytree(first, dest, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("autograded", "feedback", "report.*", "similar.*", MANIFEST))
    status: dict[str, dict] = {}
    with Gradebook(f"sqlite:///{dest / 'gradebook.db'}", course_id=COURSE_ID) as main_gb:
        for m in manifests:
            out = m["out"]
            mine = json.loads((out / STATUS_FILE).read_text()).get(lab, {}) if (out / STATUS_FILE).exists() else {}
            status.update({s: mine[s] for s in m["students"] if s in mine})
            if out != first:
                with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id=COURSE_ID) as shard_gb:
                    for sid in m["students"]:
                        _copy_student(main_gb, shard_gb, lab, sid)
            for folder in ("autograded", "feedback"):
                for sid in m["students"]:
                    src = out / folder / sid
                    if src.is_dir():
                        shutil.copytree(src, dest / folder / sid, dirs_exist_ok=True)
    (dest / STATUS_FILE).write_text(json.dumps({lab: dict(sorted(status.items()))}, indent=1))
    write_csv(dest / "grades.csv", lab, dest)
    try:
        from .report import write_report
        write_report([dest])
    except Exception as exc:  # noqa: BLE001 - the merged grades stand; the report can be made again
        print(f"the class report could not be written ({exc}): run gpudl report {dest}")
    return dest
