"""What `gpudl bench NAME --record` keeps for the lectures, and what `bench grading` says of full marks."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from gpudl import benchmarks, hardware
from gpudl.benchmarks import _record
from gpudl.table import Table


def _as_gpu(monkeypatch, name: str, device: str) -> None:
    """Make this process look like a machine with GPU ``name`` (the record reads nothing else of it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: device)
    monkeypatch.setattr(hardware, "detect", lambda *a, **k: hardware.get_spec(name))


def test_a_record_keeps_one_entry_per_gpu_and_replaces_only_its_own(monkeypatch, tmp_path):
    path = tmp_path / "bench_x.json"
    table = Table("t", rows=[{"part": "a", "n": np.int64(8), "ms": np.float32(0.5), "bad": float("nan"), "ok": True},
                             {"part": "b", "n": 16, "ms": 1.25, "what": None}], notes=["a note"])
    _as_gpu(monkeypatch, "H100-SXM", "NVIDIA H100 80GB HBM3")
    _record.record("x", table, ["--size", "8"], path)
    _as_gpu(monkeypatch, "H200", "NVIDIA H200")
    _record.record("x", Table("t", rows=[{"part": "a", "n": 8, "ms": 0.4}]), [], path)
    kept = json.loads(path.read_text())
    assert sorted(kept) == ["H100-SXM", "H200"]
    h100 = kept["H100-SXM"]
    assert h100["command"] == "gpudl bench x --size 8" and h100["device"] == "NVIDIA H100 80GB HBM3"
    assert h100["rows"][0] == {"part": "a", "n": 8, "ms": 0.5, "bad": None, "ok": True}   # NumPy and NaN as JSON
    assert h100["notes"] == ["a note"] and h100["torch"] == torch.__version__
    _record.record("x", Table("t", rows=[{"part": "a", "n": 8, "ms": 0.3}]), [], path)     # the H200 again
    kept = _record.recorded("x", path)
    assert kept["H200"]["rows"] == [{"part": "a", "n": 8, "ms": 0.3}] and len(kept["H100-SXM"]["rows"]) == 2

    shown = _record.recorded_table("x", "H100-SXM", keep=lambda r: r["part"] == "b", columns=["n", "ms"], path=path)
    assert shown.rows == [{"n": 16, "ms": 1.25}] and "gpudl bench x --size 8" in shown.title
    with pytest.raises(KeyError, match="nothing recorded for A100.*recorded: H100-SXM, H200"):
        _record.recorded_table("x", "A100", path=path)


def test_a_record_refuses_a_machine_without_a_gpu_and_a_file_that_is_not_one(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="no GPU"):
        _record.record("x", Table("t", rows=[{"n": 1}]), [], tmp_path / "r.json")
    assert _record.recorded("x", tmp_path / "none.json") == {}
    (tmp_path / "bad.json").write_text(json.dumps({"H100-SXM": {"rows": []}}))      # no device, date, command
    with pytest.raises(ValueError, match="not a record of `gpudl bench x --record`"):
        _record.recorded("x", tmp_path / "bad.json")


def test_every_benchmark_takes_record_and_a_cpu_run_records_nothing(tmp_path):
    """The registry gives every benchmark --record; on this machine (no GPU in CI) the run's notes
    say that nothing was kept, and no file appears."""
    if hardware.cuda_available():
        pytest.skip("a GPU machine records; the CPU's refusal is tested without one")
    for name in benchmarks.names():
        assert "--record" in benchmarks.parser(name).format_help()
    table = benchmarks.run("lstm", ["--quick", "--budget", "0.05", "--record", str(tmp_path / "r.json")])
    assert any("nothing recorded" in n and "no GPU" in n for n in table.notes)
    assert not (tmp_path / "r.json").exists()


def test_the_course_records_are_records_of_their_benchmarks():
    """Each file in course/data named bench_NAME.json is a record of an existing benchmark (the
    instructor's included: conv and attention measure lab answers)."""
    import gpudl_instructor  # noqa: F401 - registers the instructor's benchmarks

    files = sorted(_record.DATA_DIR.glob("bench_*.json"))
    assert files, "no recorded measurements in course/data"
    for path in files:
        name = path.stem.removeprefix("bench_")
        assert name in benchmarks.names(), f"{path.name}: no benchmark {name}"
        for gpu, entry in _record.recorded(name).items():
            assert entry["command"].startswith(f"gpudl bench {name}") and "--record" in entry["command"], path
            assert gpu in hardware.SPECS and entry["rows"], (path, gpu)


def test_bench_grading_counts_the_copies_that_kept_full_marks(tmp_path):
    from gpudl_instructor.benchmarks import grading

    (tmp_path / "grades.csv").write_text(
        "student,status,score,max_score,percent,reason,notes,late,lms_id,test_a,test_b\n"
        "s1,graded,32,32,100.0,,,,,6,26\n"
        "s2,graded,26,32,81.2,,,,,0,26\n"
        "s3,not graded,0,32,0.0,timed out,,,,0,0\n")
    full, total, short = grading._full_marks(tmp_path)
    assert (full, total) == (1, 3)
    assert short == ["s2: 26/32 (graded)", "s3: 0/32 (not graded; timed out)"]
    # with the graded notebook at hand, the lines name the cells that lost points and why
    import nbformat

    def test_cell(gid, points, outputs):
        return nbformat.v4.new_code_cell("check()", outputs=outputs, metadata={"nbgrader": {
            "grade": True, "solution": False, "grade_id": gid, "points": points}})

    nb = nbformat.v4.new_notebook()
    nb.cells = [test_cell("test_a", 6, [nbformat.v4.new_output(
                    "error", ename="GradingError", evalue="(checked by the grader) \x1b[31myour kernel takes 9 ms\x1b[0m\nmore",
                    traceback=[])]),
                test_cell("test_b", 26, [])]
    (tmp_path / "autograded" / "s2" / "lab07").mkdir(parents=True)
    nbformat.write(nb, str(tmp_path / "autograded" / "s2" / "lab07" / "lab07.ipynb"))
    assert grading._full_marks(tmp_path, "lab07")[2][0] == (
        "s2: 26/32 (graded) lost in test_a 0/6: GradingError: (checked by the grader) your kernel takes 9 ms")


def test_bench_grading_rates_a_large_class_from_the_students_timings(tmp_path):
    from gpudl_instructor.benchmarks import grading

    def student(seconds, spawn, slowest):
        return {"seconds": seconds, "timings": {"spawn": spawn, "kernel_start": 2.0, "cells": 10.0, "autograde": 15.0,
                                                "feedback": 1.5, "slowest_cells": slowest}}

    (tmp_path / "grading-status.json").write_text(json.dumps({"lab03": {
        "s1": student(30.0, 10.0, {"setup": 4.0, "test_a": 3.0}),
        "s2": student(24.0, 0.0, {"setup": 6.0}),
        "s3": student(21.0, 1.0, {"test_a": 8.0})}}))
    row = grading._timings(tmp_path, "lab03", "4")
    assert row["student s"] == pytest.approx(((30 - 10) + 24 + (21 - 1)) / 3)        # the spawn wait left out
    assert row["class /min"] == pytest.approx(4 * 60 / row["student s"])
    assert (row["kernel s"], row["cells s"], row["nbgrader s"], row["feedback s"]) == (2.0, 10.0, 3.0, 1.5)
    assert row["spawn s"] == 1.0 and row["slowest cell"] == "setup 4.0 s"            # the cell slowest most often
    assert "class /min" not in grading._timings(tmp_path, "lab03", "?") and "timed alone/shared" not in row
    status = json.loads((tmp_path / "grading-status.json").read_text())
    status["lab03"]["s1"]["timings"].update(timed_alone=3, timed_shared=1)
    status["lab03"]["s2"]["timings"].update(timed_alone=2, timed_shared=0)
    (tmp_path / "grading-status.json").write_text(json.dumps(status))
    assert grading._timings(tmp_path, "lab03", "4")["timed alone/shared"] == "5/1"
