"""Notebooks as text, and the cell surgery the grading pipeline needs.

The lab and lecture notebooks (``.ipynb``) are the sources. To write or review one as
text, ``python -m gpudl.notebooks to-py NB.ipynb`` prints it in a "percent" format and
``python -m gpudl.notebooks to-ipynb NB.py -o NB.ipynb`` turns it back; the round trip is
lossless (a notebook holding anything the text form cannot say is refused, not mangled).

Each cell starts with a header line; the kind sets nbgrader's metadata::

    # %% [markdown]                              prose (each line written as "# text")
    # %% [code]                                  a code cell the student may edit freely
    # %% [readonly] id=setup                     locked code (imports, data, plots)
    # %% [solution] id=peak_flops                autograded answer: its body sits between
                                                 ### BEGIN SOLUTION / ### END SOLUTION
    # %% [test] id=test_peak_flops points=3      locked autograder test, worth 3 points
    # %% [manual] id=why_memory points=2         manually graded answer (markdown)
    # %% [task] id=plot_task points=2            manually graded task (markdown)

Public names: ``from_py``, ``to_py``, ``read``, ``write``, ``graded_cells``,
``find_cell``, ``replace_source``, ``KINDS``.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

KINDS = ("markdown", "code", "readonly", "solution", "test", "manual", "task")
_HEADER = re.compile(r"^# %% \[(?P<kind>[a-z]+)\](?P<rest>.*)$")
_KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _nbgrader_meta(kind: str, grade_id: str, points: float | None) -> dict[str, Any] | None:
    if kind in ("markdown", "code"):
        return None
    meta = {"grade": kind in ("test", "manual"), "grade_id": grade_id,
            "locked": kind in ("readonly", "test", "task"), "schema_version": 3,
            "solution": kind in ("solution", "manual"), "task": kind == "task"}
    if kind in ("test", "manual", "task"):
        meta["points"] = points
    return meta


def _kind_of(cell: NotebookNode) -> str:
    nbg = cell.get("metadata", {}).get("nbgrader")
    if not nbg:
        return "markdown" if cell.cell_type == "markdown" else "code"
    if nbg.get("task"):
        return "task"
    if nbg.get("grade") and nbg.get("solution"):
        return "manual"
    if nbg.get("grade"):
        return "test"
    if nbg.get("solution"):
        return "solution"
    return "readonly"


def _parse_header(line: str, lineno: int) -> tuple[str, str | None, float | None]:
    m = _HEADER.match(line)
    if not m or m["kind"] not in KINDS:
        raise ValueError(f"line {lineno}: bad cell header {line!r}; kinds are {', '.join(KINDS)}")
    fields = dict(kv.split("=", 1) for kv in m["rest"].split())
    unknown = set(fields) - {"id", "points"}
    if unknown:
        raise ValueError(f"line {lineno}: unknown header fields {sorted(unknown)}")
    kind = m["kind"]
    grade_id = fields.get("id")
    points = float(fields["points"]) if "points" in fields else None
    if kind not in ("markdown", "code") and not grade_id:
        raise ValueError(f"line {lineno}: a [{kind}] cell needs id=...")
    if kind in ("test", "manual", "task") and points is None:
        raise ValueError(f"line {lineno}: a [{kind}] cell needs points=...")
    if kind in ("markdown", "code", "readonly", "solution") and points is not None:
        raise ValueError(f"line {lineno}: a [{kind}] cell has no points")
    if points is not None and points.is_integer():
        points = int(points)
    return kind, grade_id, points


def from_py(text: str) -> NotebookNode:
    """Build a notebook from the percent-format text."""
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": dict(_KERNELSPEC), "language_info": {"name": "python"}}
    chunks: list[tuple[str, str | None, float | None, list[str]]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("# %% ["):
            chunks.append((*_parse_header(line, lineno), []))
        elif chunks:
            chunks[-1][3].append(line)
        elif line.strip():
            raise ValueError(f"line {lineno}: text before the first cell header")
    seen: set[str] = set()
    for index, (kind, grade_id, points, lines) in enumerate(chunks):
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        markdown = kind in ("markdown", "manual", "task")
        if markdown:
            bad = [ln for ln in lines if ln and not ln.startswith("#")]
            if bad:
                raise ValueError(f"a [{kind}] cell's lines must start with '#': {bad[0]!r}")
            lines = [ln[2:] if ln.startswith("# ") else ln[1:] for ln in lines]
        source = "\n".join(lines)
        cell = nbformat.v4.new_markdown_cell(source) if markdown else nbformat.v4.new_code_cell(source)
        if grade_id:
            if grade_id in seen:
                raise ValueError(f"cell id {grade_id!r} is used twice")
            seen.add(grade_id)
        cell.id = grade_id or f"cell-{index:03d}"
        meta = _nbgrader_meta(kind, grade_id, points)
        if meta:
            cell.metadata["nbgrader"] = meta
        if kind == "solution" and "### BEGIN SOLUTION" not in source:
            raise ValueError(f"solution cell {grade_id!r} has no '### BEGIN SOLUTION' marker: "
                             "nbgrader would blank the whole cell in the release")
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def to_py(nb: NotebookNode) -> str:
    """The percent-format text of a notebook; refuses what the text cannot represent."""
    out: list[str] = []
    for index, cell in enumerate(nb.cells):
        kind = _kind_of(cell)
        extra = set(cell.get("metadata", {})) - {"nbgrader", "deletable", "editable"}
        if extra:
            raise ValueError(f"cell {index} has metadata the text form cannot keep: {sorted(extra)}")
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        header = f"# %% [{kind}]"
        if nbg.get("grade_id"):
            header += f" id={nbg['grade_id']}"
        if "points" in nbg and kind in ("test", "manual", "task"):
            p = nbg["points"]
            header += f" points={int(p) if float(p).is_integer() else p}"
        out.append(header)
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "markdown":
            out.extend(("# " + ln) if ln else "#" for ln in source.split("\n"))
        else:
            out.append(source)
        out.append("")
    return "\n".join(out)


def read(path: str | Path) -> NotebookNode:
    return nbformat.read(str(path), as_version=4)


def write(nb: NotebookNode, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def graded_cells(nb: NotebookNode) -> dict[str, float]:
    """grade_id -> points of every cell that carries points (tests, manual answers, tasks)."""
    out: dict[str, float] = {}
    for cell in nb.cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if nbg.get("grade") or nbg.get("task"):
            out[nbg["grade_id"]] = float(nbg.get("points", 0))
    return out


def find_cell(nb: NotebookNode, grade_id: str) -> NotebookNode:
    matches = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id]
    if len(matches) != 1:
        raise KeyError(f"{len(matches)} cells with grade_id {grade_id!r}")
    return matches[0]


def replace_source(nb: NotebookNode, grade_id: str, source: str) -> NotebookNode:
    """A copy of ``nb`` with one cell's source replaced (how mutants are planted)."""
    new = nbformat.reads(nbformat.writes(nb), as_version=4)
    find_cell(new, grade_id).source = source
    return new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpudl.notebooks", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p1 = sub.add_parser("to-py", help="print a notebook as percent-format text")
    p1.add_argument("notebook")
    p1.add_argument("-o", "--output")
    p2 = sub.add_parser("to-ipynb", help="build a notebook from percent-format text")
    p2.add_argument("text")
    p2.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    if args.cmd == "to-py":
        text = to_py(read(args.notebook))
        if args.output:
            Path(args.output).write_text(text)
        else:
            sys.stdout.write(text)
    else:
        write(from_py(Path(args.text).read_text()), args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
