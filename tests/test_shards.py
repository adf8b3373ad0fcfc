"""A class graded in shards on several machines and merged equals the class graded in one run."""
from __future__ import annotations

import csv
import json

import nbformat
import pytest

from conftest import ROOT, SANDBOX, all_mutants, student_copy
from gpudl import notebooks
from gpudl_instructor import pipeline, shards

LAB = "lab01_performance_basics"
STUDENTS = ["ada", "bo", "cy", "dee"]


def test_every_student_is_in_exactly_one_shard_whatever_n():
    ids = [f"student-{i}" for i in range(200)] + STUDENTS
    for n in (1, 2, 3, 7):
        owners = [[k for k in range(1, n + 1) if shards.in_shard(s, k, n)] for s in ids]
        assert all(len(o) == 1 for o in owners)
        if n > 1:
            assert len({o[0] for o in owners}) == n          # no shard left empty by the hash on 206 students
    assert shards.parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "2", "a/b"):
        with pytest.raises(ValueError, match="--shard"):
            shards.parse_shard(bad)


def _rows(path):
    with open(path, newline="") as fh:
        return sorted(tuple(r) for r in list(csv.reader(fh))[1:])


def _book(out):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id="gpudl") as gb:
        return {(s.student.id, g.name): (g.auto_score, g.manual_score) for s in gb.find_assignment(LAB).submissions
                for nb in s.notebooks for g in nb.grades}, {s.id: (s.first_name, s.last_name) for s in gb.students}


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOX, reason="grading needs the sandbox (bubblewrap)")
def test_three_shards_merged_equal_one_run_and_a_missing_or_repeated_shard_is_refused(tmp_path):
    subs = tmp_path / "subs"
    good = student_copy(LAB)
    mutant = next(m for m in all_mutants() if m.lab == LAB and not m.replacements)
    for i, sid in enumerate(STUDENTS):
        (subs / sid).mkdir(parents=True)
        nb = good if i % 2 else notebooks.replace_source(good, mutant.cell, mutant.planted(""))
        nbformat.write(nb, str(subs / sid / f"{LAB}.ipynb"))
    (subs / "gus").mkdir()
    (subs / "gus" / f"{LAB}.ipynb").write_text("not a notebook")
    kw = dict(root=ROOT, secret="shard-secret", jobs=2, progress=False, echo=lambda *_: None)
    whole = tmp_path / "whole"
    pipeline.grade(LAB, subs, whole, **kw)
    parts = []
    for k in (1, 2, 3):
        parts.append(tmp_path / f"shard{k}")
        pipeline.grade(LAB, subs, parts[-1], shard=(k, 3), **kw)
    seen = [json.loads((p / shards.MANIFEST).read_text())["students"] for p in parts]
    assert sorted(s for part in seen for s in part) == sorted(STUDENTS + ["gus"])

    with pytest.raises(ValueError, match=r"shard\(s\) 3/3 missing: not graded: " + ", ".join(sorted(seen[2]))):
        shards.merge(parts[:2], tmp_path / "partial")
    with pytest.raises(ValueError, match="shard 2/3 is given twice"):
        shards.merge([parts[0], parts[1], parts[1], parts[2]], tmp_path / "twice")

    merged = shards.merge(parts, tmp_path / "merged")
    assert _rows(merged / "grades.csv") == _rows(whole / "grades.csv")
    assert _book(merged) == _book(whole)
    for folder in ("feedback", "autograded"):
        files = sorted(p.relative_to(whole / folder) for p in (whole / folder).rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(merged / folder) for p in (merged / folder).rglob("*") if p.is_file())
        assert len(files) == len(STUDENTS)               # gus could not be graded: no page, no notebook
    page = (merged / "feedback" / "ada" / LAB / f"{LAB}.html").read_text()
    assert page == (whole / "feedback" / "ada" / LAB / f"{LAB}.html").read_text()
    assert (merged / "report.html").is_file()
