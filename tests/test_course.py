"""Every lecture notebook under course/ executes on this machine without an error."""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
COURSE = sorted((ROOT / "course").glob("*.ipynb"))
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("path", COURSE, ids=lambda p: p.stem)
def test_course_notebook_runs(path, tmp_path):
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name} is committed with outputs: clear them"
    env_backend = os.environ.setdefault("MPLBACKEND", "Agg")
    assert env_backend
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [(i, o.ename, o.evalue) for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: {errors}"
