"""Links in the notebooks open: every relative link resolves from the notebook's folder (as
JupyterLab resolves it when `gpudl lab` serves the repository or a hand-out), each lab links to
its lecture, and a lab's "Next: Unit NN" is a link to that unit's lecture notebook.

Units 04, 08, 09 and 10 are being written: a link to one of their notebooks is fine once the
notebook exists, and is a broken link until then, like any other.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted([*ROOT.glob("course/*.ipynb"), *ROOT.glob("labs/*/*.ipynb"), *ROOT.glob("solutions/*/*.ipynb")])
LABS = sorted(ROOT.glob("labs/*/*.ipynb"))
LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")


def links(md: str) -> list[tuple[str, str]]:
    return [(m["text"], m["target"]) for m in LINK.finditer(md)]


def relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) and not target.startswith(("#", "/"))


def markdown(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "markdown"]


def test_the_link_pattern_reads_the_links_the_labs_write():
    md = "**Read first:** the lecture notebook [`course/07_attention.ipynb`](../../course/07_attention.ipynb)."
    assert links(md) == [("`course/07_attention.ipynb`", "../../course/07_attention.ipynb")]
    assert not relative("https://docs.nvidia.com/cuda/") and not relative("#section") and relative("../x.ipynb")


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(nb):
    broken = []
    for md in markdown(nb):
        for text, target in links(md):
            if relative(target):
                path = (nb.parent / unquote(target.split("#")[0])).resolve()
                if not path.exists() or not path.is_relative_to(ROOT):
                    broken.append(f"[{text}]({target})")
    assert not broken, f"links that do not open from {nb.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_a_lab_links_to_its_lecture_first(lab):
    unit = re.match(r"lab(\d\d)_", lab.stem)[1]
    first = markdown(lab)[0]
    targets = [(lab.parent / t).resolve() for _, t in links(first) if relative(t)]
    lectures = [t for t in targets if t.parent == ROOT / "course" and t.name.startswith(f"{unit}_") and t.is_file()]
    assert "Read first" in first and lectures, f"{lab.name}: the first cell should link to course/{unit}_*.ipynb"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_next_unit_pointers_link_to_a_lecture_that_exists(lab):
    for md in markdown(lab):
        for m in re.finditer(r"Next[:,]\s+Unit\s+(\d\d),?\s*(?P<rest>[^\n]*\n?[^\n]*)", md):
            unit = m[1]
            targets = [t for _, t in links(m["rest"])[:1] if relative(t)]     # the first link after it
            assert any(re.search(rf"course/{unit}_[^/]+\.ipynb$", t) and (lab.parent / t).is_file() for t in targets), (
                f"{lab.name}: 'Next: Unit {unit}' without a link to an existing course/{unit}_*.ipynb")


def test_the_start_page_lists_every_unit_in_order_with_its_lecture_and_lab():
    start = nbformat.read(ROOT / "START.ipynb", as_version=4)
    targets = [t for c in start.cells if c.cell_type == "markdown" for _, t in links(c.source)]
    lectures = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("course/*.ipynb"))
    labs = sorted(p.relative_to(ROOT).as_posix() for p in LABS)
    assert [t for t in targets if t.startswith("course/")] == lectures
    assert [t for t in targets if t.startswith("labs/")] == labs
    assert all((ROOT / unquote(t)).is_file() for t in targets)
