"""The answer hunt: the course edition holds nothing that scores on a hidden check, and the hunt
would notice if it did (a planted answer, a pasted solution)."""
from __future__ import annotations

import contextlib

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, lab_names
from gpudl_instructor import hunt

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hunt")]   # with the hand-out's tests


@pytest.mark.parametrize("lab", lab_names())
def test_the_course_edition_holds_no_answer_of(lab):
    if lab in hunt.PENDING:
        pytest.skip(f"{lab}: {hunt.PENDING[lab]}")
    findings = hunt.hunt([lab], ROOT)
    assert not findings, hunt.report(findings)


def test_the_hunt_names_an_answer_planted_among_the_candidates():
    """The instructor's reference of an exercise, offered as if it were a course tool, scores and is named;
    a tool with the wrong contract does not."""
    from gpudl_instructor.references import lab06

    pool = {"gpudl.planted.sgd_step": lab06.sgd_step, "gpudl.planted.sorted": lambda a, b, c: sorted(a)}
    findings = hunt.hunt_callables("lab06_lstm_bptt", ROOT, pool=pool)
    assert [(f.exercise, f.where) for f in findings] == [("test_sgd_step", "gpudl.planted.sgd_step")], findings


def test_the_text_hunt_finds_a_solution_pasted_into_the_course_edition(tmp_path):
    lab = "lab06_lstm_bptt"
    for folder in ("course", f"solutions/{lab}", f"labs/{lab}"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    (tmp_path / "src" / "gpudl").mkdir(parents=True)
    assert hunt.text_hunt(lab, tmp_path) == []
    solution = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    cell = next(c for c in solution.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "lstm_cell_backward")
    (tmp_path / "src" / "gpudl" / "helpers.py").write_text("# a helper\n" + cell.source.replace("### BEGIN SOLUTION", ""))
    findings = hunt.text_hunt(lab, tmp_path)
    assert [(f.exercise, f.where) for f in findings] == [("lstm_cell_backward", "src/gpudl/helpers.py")], findings


def _fake_course(tmp_path, labs):
    (tmp_path / "nbgrader_config.py").write_text("")
    for lab in labs:
        for folder in ("solutions", "labs"):
            (tmp_path / folder / lab).mkdir(parents=True)
            (tmp_path / folder / lab / f"{lab}.ipynb").write_text(f"{{}} {folder} {lab}")
    return tmp_path


def test_labs_hunt_side_by_side_the_longest_first_and_report_in_lab_order(tmp_path, monkeypatch):
    """Two at a time: the labs whose last hunt took longest start first (without a record, the later
    labs); the findings come back in the labs' order whatever order the hunts end in, the cache keeps
    each lab's time, and a lab unchanged since its last hunt is not hunted again."""
    import threading
    import time

    monkeypatch.delenv(hunt.CACHE_ENV, raising=False)         # kept in the course's .gpudl-hunt/
    labs = ["lab01_a", "lab02_b", "lab03_c", "lab04_d"]
    root = _fake_course(tmp_path, labs)
    took = {"lab01_a": 0.3, "lab02_b": 0.05, "lab03_c": 0.2, "lab04_d": 0.1}
    started, running, most = [], [0], [0]
    lock = threading.Lock()

    locked = hunt._locked

    @contextlib.contextmanager
    def in_order(path):          # a lab has started once it holds its lock: the next is submitted after that
        with locked(path):
            started.append(path.stem)
            yield

    def fake(lab, where):
        assert where == root
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(took[lab])
        with lock:
            running[0] -= 1
        return [hunt.Finding(lab, "test_x", "callable", f"gpudl.{lab}")] if lab != "lab02_b" else []

    monkeypatch.setattr(hunt, "_hunt_in_process", fake)
    monkeypatch.setattr(hunt, "_locked", in_order)
    lines = []
    found = hunt.hunt(None, root, jobs=2, progress=lines.append)
    assert [f.lab for f in found] == ["lab01_a", "lab03_c", "lab04_d"]
    assert started == ["lab04_d", "lab03_c", "lab02_b", "lab01_a"] and most[0] == 2
    assert lines[0] == "hunt: 4 lab(s) to hunt in, 2 at a time"
    assert sorted(line.split(":")[1].strip() for line in lines[1:]) == labs
    assert any(line.startswith("hunt: lab02_b: no answer (") for line in lines)

    # lab03 changes: it alone is hunted again; then, with every time on record, the longest starts first
    (root / "solutions" / "lab03_c" / "lab03_c.ipynb").write_text("{} changed")
    started.clear()
    assert [f.lab for f in hunt.hunt(None, root, jobs=2)] == ["lab01_a", "lab03_c", "lab04_d"]
    assert started == ["lab03_c"]
    stores = {lab: root / ".gpudl-hunt" / f"{lab}.json" for lab in labs}
    assert all(json.loads(stores[lab].read_text())["seconds"] >= round(took[lab], 1) for lab in labs)
    for lab, seconds in {"lab01_a": 30, "lab02_b": 900, "lab03_c": 5, "lab04_d": 60}.items():
        kept = json.loads(stores[lab].read_text())
        stores[lab].write_text(json.dumps({**kept, "key": "sources since changed", "seconds": seconds}))
    started.clear()
    hunt.hunt(None, root, jobs=1)
    assert started == ["lab02_b", "lab04_d", "lab01_a", "lab03_c"]


def test_the_hunt_refuses_an_unknown_lab_and_no_worker(tmp_path):
    root = _fake_course(tmp_path, ["lab01_a"])
    with pytest.raises(ValueError, match="no lab 'lab07'.*lab01_a"):
        hunt.hunt(["lab07"], root)
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        hunt.hunt(None, root, jobs=0)


def test_a_failing_lab_hunt_stops_the_hunt_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.delenv(hunt.CACHE_ENV, raising=False)
    root = _fake_course(tmp_path, ["lab01_a", "lab02_b", "lab03_c"])
    started = []

    def fake(lab, where):
        started.append(lab)
        if lab == "lab03_c":
            raise RuntimeError("the hunt in lab03_c failed (exit status -9)")
        return []

    monkeypatch.setattr(hunt, "_hunt_in_process", fake)
    with pytest.raises(RuntimeError, match="lab03_c failed"):
        hunt.hunt(None, root, jobs=1)
    assert started == ["lab03_c"]              # the later labs were never started
    assert not (root / ".gpudl-hunt" / "lab03_c.json").exists()


def test_a_stopped_hunt_leaves_no_lab_hunting(tmp_path):
    """`gpudl hunt` killed (a CI timeout, a closed terminal): its labs' hunts stop with it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    lab = "lab01_performance_basics"
    for folder in ("course", f"solutions/{lab}", f"labs/{lab}"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    parent = subprocess.Popen([sys.executable, "-m", "gpudl_instructor", "hunt", "lab01", "--root", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def hunting() -> dict[int, Path]:
        """{pid: its journal} of the hunts in this course."""
        found = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = (Path("/proc") / pid / "cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
            if "gpudl_instructor.hunt" in cmd and str(tmp_path) in cmd:
                found[int(pid)] = Path(cmd[cmd.index("--journal") + 1])
        return found

    def trying() -> bool:       # well into the candidates, where the hunt writes nothing for a minute
        return any(j.is_file() and j.read_text().count("TRY") >= 3 for j in hunting().values())

    try:
        end = time.monotonic() + 180
        while not trying() and time.monotonic() < end and parent.poll() is None:
            time.sleep(0.2)
        assert trying() and parent.poll() is None, "the lab's hunt never got to its candidates"
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    end = time.monotonic() + 30
    while hunting() and time.monotonic() < end:
        time.sleep(0.2)
    assert not hunting(), "the lab's hunt outlived `gpudl hunt`"


def test_the_screen_spares_the_whole_check_only_to_candidates_that_fail_at_their_first_calls(monkeypatch):
    """Lab 10's checks start a process group per run: a candidate that raises at the first calls
    recorded from the solution is let go after one probe per exception type, one that returns and
    leaves the tensor as it was after one probe (the ring works in place), and one far slower than
    the solution at once; a planted ring, one that changes the tensor, and one that talks to its
    peers run the whole check; the ring is found."""
    import time

    import torch.distributed as dist

    from gpudl_instructor.references import lab10

    def attribute_error(t):
        return t.no_such_thing

    def another_attribute_error(t):
        return t.nor_this

    def type_error(t):
        return len(t, t)

    def slow(t):
        time.sleep(60)

    def untouched(t):
        return None

    def counts_bytes(t):
        return t.numel() * t.element_size()

    def scribbles(t):
        t.mul_(2)

    def talks(t):
        dist.barrier()

    pool = {f"gpudl.planted.{fn.__name__}": fn for fn in (lab10.ring_all_reduce, attribute_error,
                                                         another_attribute_error, type_error, slow, untouched,
                                                         counts_bytes, scribbles, talks)}
    runs: list[str] = []
    passes = hunt._passes

    def counted(check, args, kwargs):
        if check.__name__ == "ring_all_reduce":
            runs.append(next((name for name, fn in pool.items() if fn in args), type(args[0]).__name__))
        return passes(check, args, kwargs)

    monkeypatch.setattr(hunt, "_passes", counted)
    findings = hunt.hunt_callables("lab10_multi_gpu", ROOT, pool=pool)
    assert [(f.exercise, f.where) for f in findings] == [("test_ring_all_reduce", "gpudl.planted.ring_all_reduce")]
    assert sorted(r for r in runs if r.startswith("gpudl.")) == [
        "gpudl.planted.ring_all_reduce", "gpudl.planted.scribbles", "gpudl.planted.talks"], runs
    assert runs.count("_Stand") == 4, runs     # the solution's recording run, a probe for each of two types
    #                                            and one for leaving the tensor as it was
    unscreened = []
    monkeypatch.setattr(hunt, "_passes", lambda check, args, kwargs: unscreened.append(check) or False)
    hunt.hunt_callables("lab10_multi_gpu", ROOT, pool={"gpudl.planted.type_error": type_error}, screen=False)
    assert len(unscreened) == 3          # without the screen: reduce-scatter, all-gather and all-reduce, whole


def test_an_answer_planted_in_a_copy_of_the_course_edition_is_found_by_the_whole_hunt(tmp_path, monkeypatch):
    """``hunt.hunt`` as ``gpudl handout`` runs it (a process per lab, the screen, a cold cache) on a course
    whose package holds a function that computes lab 06's SGD step: it names it."""
    monkeypatch.setenv(hunt.CACHE_ENV, str(tmp_path / "cache"))
    lab = "lab06_lstm_bptt"
    for folder in ("course", "src/gpudl", f"solutions/{lab}", f"labs/{lab}"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "nbgrader_config.py", tmp_path)
    (tmp_path / "src" / "gpudl" / "planted.py").write_text(
        '"""A helper that gives lab 06\'s answer away."""\nimport numpy as np\n\n\n'
        "def descend(weights, slopes, rate):\n"
        "    return {name: np.asarray(w) - rate * np.asarray(slopes[name]) for name, w in weights.items()}\n")
    findings = hunt.hunt([lab], tmp_path)
    assert ("test_sgd_step", "callable", "gpudl.planted.descend") in [(f.exercise, f.kind, f.where) for f in findings], \
        hunt.report(findings)
    assert json.loads((tmp_path / "cache" / f"{lab}.json").read_text())["findings"]
