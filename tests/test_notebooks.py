"""gpudl.notebooks: the text form round-trips, and malformed cells are refused."""
from __future__ import annotations

from pathlib import Path

import pytest

from gpudl import notebooks

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(ROOT.glob("solutions/*/*.ipynb")) + sorted(ROOT.glob("course/*.ipynb"))

TEXT = """# %% [markdown]
# # Title
#
# prose

# %% [readonly] id=setup
import math

# %% [solution] id=square
def square(x):
    ### BEGIN SOLUTION
    return x * x
    ### END SOLUTION

# %% [test] id=test_square points=2
assert square(3) == 9

# %% [manual] id=why points=1.5
# Because.
"""


def test_text_builds_cells_with_nbgrader_metadata():
    nb = notebooks.from_py(TEXT)
    kinds = [c.cell_type for c in nb.cells]
    assert kinds == ["markdown", "code", "code", "code", "markdown"]
    assert nb.cells[1].metadata.nbgrader == {"grade": False, "grade_id": "setup", "locked": True,
                                             "schema_version": 3, "solution": False, "task": False}
    assert nb.cells[3].metadata.nbgrader["points"] == 2 and nb.cells[3].metadata.nbgrader["grade"]
    assert nb.cells[4].metadata.nbgrader["solution"] and nb.cells[4].metadata.nbgrader["points"] == 1.5
    assert notebooks.graded_cells(nb) == {"test_square": 2.0, "why": 1.5}
    assert notebooks.to_py(nb) == TEXT


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_committed_notebooks_round_trip(path):
    nb = notebooks.read(path)
    assert notebooks.from_py(notebooks.to_py(nb)) == nb


@pytest.mark.parametrize("bad, why", [
    ("# %% [solution] id=x\ndef f():\n    return 1\n", "BEGIN SOLUTION"),
    ("# %% [test] id=t\nassert True\n", "points"),
    ("# %% [readonly]\nx = 1\n", "needs id"),
    ("# %% [mystery] id=a\n", "bad cell header"),
    ("x = 1\n# %% [code]\n", "before the first"),
    ("# %% [code] id=a\n# %% [code] id=a\n", "used twice"),
    ("# %% [markdown]\nnot a comment\n", "must start with '#'"),
])
def test_malformed_text_is_refused(bad, why):
    with pytest.raises(ValueError, match=why):
        notebooks.from_py(bad)


def test_to_py_refuses_metadata_it_cannot_keep():
    nb = notebooks.from_py(TEXT)
    nb.cells[0].metadata["tags"] = ["x"]
    with pytest.raises(ValueError, match="tags"):
        notebooks.to_py(nb)


def test_replace_source_plants_a_copy():
    nb = notebooks.from_py(TEXT)
    planted = notebooks.replace_source(nb, "square", "def square(x):\n    return 0\n")
    assert "return 0" in notebooks.find_cell(planted, "square").source
    assert "x * x" in notebooks.find_cell(nb, "square").source
    with pytest.raises(KeyError):
        notebooks.find_cell(nb, "missing")
