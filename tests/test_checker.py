"""gpudl_instructor.checker and the kernel's side in boundary: checks judged outside the kernel.

The kernel's side runs in a thread of this process with GPUDL_CHECKER pointing at a
CheckerServer: the same code paths as in a graded kernel, without nbgrader.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

import nbformat
import pytest

from gpudl.grading import GradingError, boundary, rng
from gpudl_instructor import checker
from gpudl.grading import lab01
from conftest import ROOT


@pytest.fixture
def server(tmp_path):
    import tempfile
    short = Path(tempfile.mkdtemp(prefix="gpudl-t-"))
    srv = checker.CheckerServer(short / "c.sock", seed="student-seed", call_timeout=30).start()
    old = os.environ.get(checker.CHECKER_ENV)
    os.environ[checker.CHECKER_ENV] = str(srv.path)
    yield srv
    srv.close()
    if old is None:
        os.environ.pop(checker.CHECKER_ENV, None)
    else:
        os.environ[checker.CHECKER_ENV] = old


def utilization(achieved, peak):
    return achieved / peak


def test_a_check_runs_in_the_checker_with_the_students_function_in_the_kernel(server, capsys):
    calls = []

    def counted(achieved, peak):
        calls.append(threading.get_ident())
        return achieved / peak

    server.cell = "test_utilization"
    lab01.utilization(counted)
    lab01.utilization(counted, hidden=True)
    assert calls and set(calls) == {threading.get_ident()}, "the student's function ran here, in the kernel"
    assert [(r.check.split(":")[-1], r.hidden, r.passed) for r in server.records] == [
        ("utilization", False, True), ("utilization", True, True)]
    assert "visible cases passed" in capsys.readouterr().out


def test_a_wrong_answer_fails_in_the_checker_with_the_teaching_message(server):
    server.cell = "test_utilization"
    with pytest.raises(GradingError, match="factor of 100"):
        lab01.utilization(lambda a, p: 100 * a / p)
    assert server.records[-1].passed is False and "100" in server.records[-1].message


def test_the_hidden_cases_come_from_the_checkers_seed_not_the_kernels():
    seen = {}

    def spy(achieved, peak):
        seen.setdefault("cases", []).append((achieved, peak))
        return achieved / peak

    lab01.utilization(spy, hidden=True)                    # local: the public seed
    local = list(seen.pop("cases"))
    token = __import__("gpudl.grading", fromlist=["seed_override"]).seed_override.set("student-seed")
    try:
        expected_first = float(rng("lab01.utilization").uniform(1e9, 2e15, size=6)[0])
    finally:
        __import__("gpudl.grading", fromlist=["seed_override"]).seed_override.reset(token)
    assert local[0][1] != expected_first


def test_the_verdict_needs_every_expected_check_of_the_cell(server):
    nb = nbformat.read(str(ROOT / "solutions" / "lab01_performance_basics" / "lab01_performance_basics.ipynb"),
                       as_version=4)
    expected = checker.expected_checks(nb)
    assert expected["test_utilization"] == {("gpudl.grading.lab01:utilization", False),
                                            ("gpudl.grading.lab01:utilization", True)}
    assert all(expected[c] for c in expected), "every test cell calls a check"
    server.cell = "test_utilization"
    lab01.utilization(utilization)                          # the hidden call never made
    server.cell = "test_limiter"
    verdicts = server.verdicts(expected)
    assert verdicts["test_utilization"].passed is False and "never saw" in verdicts["test_utilization"].message
    assert verdicts["test_bound"].passed is False
    server.cell = "test_utilization"
    lab01.utilization(utilization, hidden=True)
    assert server.verdicts(expected)["test_utilization"].passed is True


def test_a_rebound_check_never_reaches_the_checker(server):
    server.cell = "test_utilization"
    fake = lambda *a, **k: None                             # noqa: E731 - what a cheat writes
    fake(utilization)
    nb = nbformat.read(str(ROOT / "solutions" / "lab01_performance_basics" / "lab01_performance_basics.ipynb"),
                       as_version=4)
    assert server.verdicts(checker.expected_checks(nb))["test_utilization"].passed is False


def test_a_check_handed_as_the_answer_fails_at_once_instead_of_waiting_for_the_busy_checker(server):
    """``bound = check.bound``: the checker calls the student's ``bound``, which asks the checker, which is
    busy waiting for that very call; it waited until the cell's time limit (a whole cell timeout of a
    graded class). The call is refused at once, and the cell fails on the student's side."""
    import time

    server.cell = "test_bound"
    start = time.monotonic()
    with pytest.raises(GradingError, match=r"called a check \(bound\) while a check was calling it"):
        lab01.bound(lab01.bound)
    assert time.monotonic() - start < 10
    assert server.records[-1].passed is False
    lab01.utilization(utilization)                      # and the next check runs as usual
    assert server.records[-1].passed is True


def test_what_the_kernel_sends_back_is_plain_data_or_a_failure(server):
    server.cell = "test_limiter"
    with pytest.raises(GradingError):
        lab01.limiter(lambda m, b: type("Yes", (), {"__eq__": lambda s, o: True})())
    assert "not plain data" in server.records[-1].message or "returned" in server.records[-1].message


def test_a_kernel_that_goes_away_mid_check_fails_the_check(server):
    import socket

    from gpudl.grading import wire
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(server.path))
    wire.send(sock, {"op": "check", "check": "gpudl.grading.lab01:utilization",
                     "call": {"__dict__": [["args", {"__tuple__": [{"__fn__": 0, "name": "f"}]}],
                                           ["kwargs", {"__dict__": []}]]}}, [])
    wire.recv(sock)                                         # the checker's first call of f
    sock.close()                                            # ... and the kernel is gone
    for _ in range(100):
        if server.records:
            break
        threading.Event().wait(0.05)
    assert server.records and server.records[-1].passed is False
    assert "stopped answering" in server.records[-1].message


def test_a_check_name_outside_the_grading_modules_is_refused(server):
    import socket

    from gpudl.grading import wire
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(server.path))
    wire.send(sock, {"op": "check", "check": "os:system", "call": {"__dict__": [["args", {"__tuple__": []}],
                                                                                  ["kwargs", {"__dict__": []}]]}})
    msg, _ = wire.recv(sock)
    assert msg["op"] == "done" and msg["passed"] is False
    assert boundary.registered_check("gpudl.grading.lab01:utilization") is not None
    with pytest.raises(KeyError):
        boundary.registered_check("os:system")
