"""Writing the visible cases' expected values (``gpudl.grading.expected``) at release.

``record(lab)`` runs the solution notebook as a student's copy has it (the hidden regions of the
test cells removed) in this process, with the lab's visible checks asking the live references
(``gpudl_instructor.references.labNN``) instead of the store, and returns every call they made:
exactly what the course edition's store must answer. ``gpudl release`` writes it (``write``);
``stale(lab)`` says whether the stored file still matches what the references compute now
(the test that proves the store current).

Run alone, in a fresh process (Triton's interpreter and numba-cuda's simulator are chosen
before they are imported): ``python -m gpudl_instructor.expected record LAB [LAB ...]``.

Public names: ``record``, ``write``, ``stale``, ``visible_copy``.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import nbformat

from gpudl.grading import expected as store

from . import references
from .course import repo_root

_HIDDEN = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.S)


def visible_copy(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The solution notebook with its test cells' hidden regions removed (a student's tests)."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = _HIDDEN.sub("", cell.source)
    return nb


def has_store(lab: str) -> bool:
    """Whether ``lab`` keeps expected values (its references live in the instructor's part)."""
    try:
        references.module_of(lab)
    except ModuleNotFoundError:
        return False
    return True


def record(lab: str, root: str | Path | None = None) -> list[store.Entry]:
    """The calls of ``lab``'s visible checks on its solution, answered by the live references."""
    from .inprocess import execute

    root = repo_root(root)
    short = lab.split("_")[0]
    nb = nbformat.read(root / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    with store.recording(short, references.module_of(short)) as entries:
        execute(visible_copy(nb))
    return list(entries)


def write(labs: Sequence[str], root: str | Path | None = None, folder: Path | None = None) -> list[Path]:
    """Record ``labs`` in a fresh process and write their stores into ``folder`` (default: the
    course edition of the repository ``root``)."""
    root = repo_root(root)
    folder = Path(folder) if folder else root / "src" / "gpudl" / "grading" / "expected"
    wanted = [lab for lab in labs if has_store(lab)]
    if not wanted:
        return []
    res = subprocess.run([sys.executable, "-m", __name__, "record", "--root", str(root), "--out", str(folder),
                          *wanted], capture_output=True, text=True, cwd=root)
    if res.returncode != 0:
        raise RuntimeError(f"recording the visible cases' expected values failed:\n{res.stdout[-3000:]}{res.stderr[-3000:]}")
    return [folder / f"{lab.split('_')[0]}.json.gz" for lab in wanted]


def stale(lab: str, root: str | Path | None = None) -> list[str]:
    """What differs between ``lab``'s stored expected values and a new record (empty: current)."""
    short = lab.split("_")[0]
    fresh = record(lab, root)
    kept = store.read_store(short)
    problems = []
    for e in fresh:
        match = [k for k in kept if k.name == e.name and store.same(k.args, e.args) and store.same(k.kwargs, e.kwargs)]
        if not match:
            problems.append(f"{short}: {e.name} is called on a case the store lacks")
        elif not store.same(match[0].result, e.result, rtol=1e-6):
            problems.append(f"{short}: the stored {e.name} differs from what the reference returns now")
    return problems


def _main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog=f"python -m {__name__}")
    p.add_argument("cmd", choices=["record"])
    p.add_argument("labs", nargs="+")
    p.add_argument("--root")
    p.add_argument("--out", default=str(store.STORE_DIR))
    args = p.parse_args(argv)
    import gpudl  # noqa: F401 - chooses the device (Triton's interpreter, the simulator) before any lab runs
    for lab in args.labs:
        path = store.write_store(lab.split("_")[0], record(lab, args.root), Path(args.out))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
