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
