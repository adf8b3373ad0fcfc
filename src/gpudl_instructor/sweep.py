"""``gpudl sweep LAB --students N``: does the solution keep full marks whatever a student's seed?

Hidden cases are drawn from a seed that derives from the secret, the lab and the student
(``pipeline.student_seed``), so a check whose expectation breaks on a rare draw (an edge the
reference and the comparison disagree on) costs a correct student points only now and then. The
sweep grades the solution under N students' ids and names every seed that loses a point.

Only the hidden cases depend on the seed, so the sweep runs the solution notebook once in this
process (``gpudl_instructor.inprocess``'s cell runner, hidden regions left out), then, for each
student, the hidden region of every test cell (``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN
TESTS``) in the same namespace with that student's seed (a cell that fails in the first run,
where no seed is used, costs every student its points and is reported once): the checks of ``gpudl grade`` with the
student's functions called in this process instead of a sandboxed kernel. That is a few
seconds per student where sandboxed grading takes tens, so 300 students fit in minutes for most
labs. A hidden region that raises is that student's lost points, with the check's message.

Public names: ``hidden_regions``, ``SweepResult``, ``sweep``.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import nbformat

_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n?(.*?)### END HIDDEN TESTS[ \t]*\n?", re.S)


def hidden_regions(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(test cell id, source of its hidden region) for every graded test cell that has one."""
    out = []
    for cell in nb.cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type == "code" and nbg.get("grade") and not nbg.get("solution"):
            found = _HIDDEN.findall(cell.source)
            if found:
                out.append((nbg["grade_id"], "\n".join(found)))
    return out


@dataclass
class SweepResult:
    lab: str
    students: int
    full: int = 0
    failures: list[tuple[str, str, str]] = field(default_factory=list)     # (student, test cell, message)
    everyone: list[tuple[str, str]] = field(default_factory=list)          # (cell, message): failed for any seed
    seconds: float = 0.0

    def lines(self) -> list[str]:
        head = (f"{self.lab}: {self.full} of {self.students} students at full marks "
                f"({self.seconds:.0f} s, the hidden checks in-process)")
        return ([head] + [f"  every student: {cell}: {msg}" for cell, msg in self.everyone]
                + [f"  {s}: {cell}: {msg}" for s, cell, msg in self.failures])


def _message(exc: BaseException) -> str:
    text = " / ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
    return f"{type(exc).__name__}: {text[:400]}"


def sweep(lab: str, students: int = 300, *, secret: str | None = None, root: str | Path | None = None,
          notebook: str | Path | None = None, prefix: str = "student",
          echo: Callable[[str], Any] = print) -> SweepResult:
    """Run ``notebook`` (default: the lab's solution) once, then its hidden checks under the seeds of
    ``students`` student ids (``{prefix}0000``, ...) derived from ``secret`` (default: the grader's)."""
    from gpudl import notebooks
    from gpudl.grading import seed_override

    from . import checks, inprocess
    from .pipeline import load_secret, repo_root, student_seed

    if students < 1:
        raise ValueError(f"--students must be 1 or more, got {students}")
    root = repo_root(root)
    path = Path(notebook) if notebook else root / "solutions" / lab / f"{lab}.ipynb"
    if not path.is_file():
        raise FileNotFoundError(f"no notebook {path}")
    secret = load_secret(root, secret, echo=echo)
    checks.install()
    nb = notebooks.read(path)
    regions = hidden_regions(nb)
    if not regions:
        raise ValueError(f"{path} has no hidden tests to sweep")
    result = SweepResult(lab, students)
    start = time.monotonic()
    namespace: dict[str, Any] = {"__name__": "__main__"}
    with inprocess._isolated_state():
        os.environ["NBGRADER_EXECUTION"] = "autograde"
        for index, cell in enumerate(nb.cells):          # the notebook once, without its hidden regions
            if cell.cell_type != "code":
                continue
            body, last = inprocess._compile_cell(_HIDDEN.sub("", cell.source), f"<gpudl-sweep-{lab}-cell{index}>")
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    exec(body, namespace)
                    if last is not None:
                        eval(last, namespace)
            except Exception as exc:  # noqa: BLE001 - nbgrader runs on after an error; so does the sweep
                cid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", f"cell {index + 1}")
                result.everyone.append((cid, _message(exc)))
        compiled = [(cid, compile(src, f"<gpudl-sweep-{lab}-{cid}>", "exec")) for cid, src in regions]
        for i in range(students):
            student = f"{prefix}{i:04d}"
            token = seed_override.set(student_seed(secret, lab, student))
            lost = False
            try:
                for cid, code in compiled:
                    try:
                        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                            exec(code, namespace)
                    except Exception as exc:  # noqa: BLE001 - every failure is that student's lost points
                        lost = True
                        result.failures.append((student, cid, _message(exc)))
            finally:
                seed_override.reset(token)
            result.full += not (lost or result.everyone)
    result.seconds = time.monotonic() - start
    return result


__all__ = ["hidden_regions", "SweepResult", "sweep"]
