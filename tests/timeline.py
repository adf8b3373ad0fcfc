"""Where the minutes of a test run go: a pytest plugin (loaded by conftest.py).

Always, at the end of a run: the number of tests and the wall time. With ``--timeline`` (``make
test-profile``): the slowest set-ups and calls, and each xdist worker's timeline, its test groups
(an xdist group, else the module) in the order it ran them, with when each began and how long it
took, and how long the worker sat idle. ``--timeline-json FILE`` writes the same records as JSON.

Under xdist the reports reach the controller, which sees every worker's; each report carries its
wall-clock ``start`` and ``stop`` and the worker that made it.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass

import pytest


@dataclass
class Record:
    nodeid: str
    when: str              # setup, call or teardown
    worker: str            # gw0, gw1, ... or "main" without xdist
    group: str             # the xdist group, else the module
    start: float
    stop: float
    outcome: str

    @property
    def seconds(self) -> float:
        return self.stop - self.start


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("timeline", "where a run's time goes")
    group.addoption("--timeline", action="store_true",
                    help="print the slowest set-ups and calls and each worker's timeline at the end")
    group.addoption("--timeline-json", metavar="FILE", help="write every set-up, call and teardown's times as JSON")


def _group(nodeid: str) -> str:
    if "@" in nodeid:                   # xdist's loadgroup appends @GROUP to the node id
        return nodeid.rsplit("@", 1)[1]
    return nodeid.split("::", 1)[0]


class Timeline:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: list[Record] = []
        self.began = time.time()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = getattr(report, "node", None)
        worker = node.gateway.id if node is not None else "main"
        self.records.append(Record(report.nodeid, report.when, worker, _group(report.nodeid), report.start,
                                   report.stop, report.outcome))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        tr = terminalreporter
        wall = time.time() - self.began
        tests = {r.nodeid for r in self.records}
        if self.config.getoption("timeline"):
            self.print_profile(tr.write_line)
        path = self.config.getoption("timeline_json")
        if path:
            with open(path, "w") as f:
                json.dump([asdict(r) for r in self.records], f)
        tr.write_line(f"timeline: {len(tests)} tests in {wall // 60:.0f} min {wall % 60:.0f} s of wall time")

    def print_profile(self, say) -> None:
        if not self.records:
            return
        say("")
        for when, n in (("setup", 10), ("call", 15)):
            say(f"slowest {when}s:")
            for r in sorted((r for r in self.records if r.when == when), key=lambda r: -r.seconds)[:n]:
                say(f"  {r.seconds:8.1f} s  {r.worker:5} {r.nodeid}")
        origin = min(r.start for r in self.records)
        end = max(r.stop for r in self.records)
        by_worker: dict[str, list[Record]] = defaultdict(list)
        for r in self.records:
            by_worker[r.worker].append(r)
        say("each worker's timeline (minutes from the first test: group, its tests, minutes):")
        for worker in sorted(by_worker):
            rows = sorted(by_worker[worker], key=lambda r: r.start)
            spans: list[list] = []             # [group, first start, last stop, tests]
            for r in rows:
                if spans and spans[-1][0] == r.group:
                    spans[-1][2] = max(spans[-1][2], r.stop)
                    spans[-1][3].add(r.nodeid)
                else:
                    spans.append([r.group, r.start, r.stop, {r.nodeid}])
            busy = sum(r.seconds for r in rows)
            say(f"  {worker}: busy {busy / 60:.1f} min, idle {(end - origin - busy) / 60:.1f} min")
            for group, start, stop, ids in spans:
                if stop - start >= 5:
                    say(f"    {(start - origin) / 60:6.1f}  {group} ({len(ids)}): {(stop - start) / 60:.1f}")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):          # the controller (or a run without xdist) keeps the records
        config.pluginmanager.register(Timeline(config), "gpudl-timeline")
