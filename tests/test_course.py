"""Every lecture notebook under course/ executes on this machine without an error.

The notebooks run in this process (``tests/lecture_run.py``), once per session: the same run
serves ``test_lecture_figures.py``. ``gpudl run-labs`` executes them in a Jupyter kernel
(``tests/test_runlabs.py``, and on a GPU runner every notebook).
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from lecture_run import executed

ROOT = Path(__file__).resolve().parents[1]
COURSE = sorted((ROOT / "course").glob("*.ipynb"))
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem, marks=pytest.mark.xdist_group(f"lecture-{p.stem}"))
                                  for p in COURSE])
def test_course_notebook_runs(path):
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name} is committed with outputs: clear them"
    run = executed(path)
    assert run.error is None, f"{path.name}: {run.error}"


def test_lecture_examples_of_cpu_tensors_ask_for_gloo():
    """``launch`` picks NCCL where there is a GPU per rank, and NCCL moves GPU memory only: on two
    GPUs the lecture's k = 2 example of CPU tensors failed ("No backend type associated with device
    type cpu"). Each function the lecture itself defines and launches must name its backend."""
    import ast

    for path in COURSE:
        cells = [c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code"]
        trees = [ast.parse("\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!"))))
                 for src in cells]
        defined = {n.name for t in trees for n in ast.walk(t) if isinstance(n, ast.FunctionDef)}
        for t in trees:
            for call in ast.walk(t):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "launch"
                        and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in defined):
                    assert any(k.arg == "backend" for k in call.keywords), \
                        f"{path.name}: launch({call.args[0].id}, ...) names no backend: {ast.unparse(call)}"
