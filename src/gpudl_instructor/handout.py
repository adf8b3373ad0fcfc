"""The student hand-out: what students get, and nothing they should not have.

``gpudl handout DIR`` writes, from the course repository:

    README.md, Makefile        for students (from the repository's student/ folder)
    labs/                      the released lab notebooks
    course/                    the lecture notebooks
    src/gpudl/, pyproject.toml, constraints/, environment.yml
                               the package, installable with `make lab` or `pip install -e .`

and never ``solutions/``, ``tests/`` (with the mutants), the secret, a gradebook, grading outputs,
nbgrader's course config or the CI files. Before writing, every notebook is checked for
solution and hidden-test markers, so a lab released by hand from a solution cannot leak.

Public names: ``handout``, ``HANDOUT``, ``LEAK_MARKERS``, ``leaks``.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

# What the hand-out holds: repository path -> hand-out path.
HANDOUT = {
    "student/README.md": "README.md",
    "student/Makefile": "Makefile",
    "labs": "labs",
    "course": "course",
    "src/gpudl": "src/gpudl",
    "pyproject.toml": "pyproject.toml",
    "constraints": "constraints",
    "environment.yml": "environment.yml",
}
# Never copied, wherever they sit below a copied folder.
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "gradebook.db",
                                 ".gpudl-secret", "nbgrader_config.py")
# Text that only the instructor's notebooks hold (nbgrader's markers around solutions and hidden tests).
LEAK_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION", "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS",
                "hidden=True")


def leaks(folder: Path) -> list[str]:
    """Notebooks under ``folder`` that hold a solution or a hidden test, as 'path: marker' lines."""
    found = []
    for nb in sorted(Path(folder).rglob("*.ipynb")):
        text = nb.read_text(encoding="utf-8")
        found += [f"{nb.relative_to(folder)}: {m}" for m in LEAK_MARKERS if m in text]
    return found


def handout(dest: str | Path, root: str | Path | None = None, *, force: bool = False) -> Path:
    """Write the student hand-out of the course repository ``root`` into ``dest``; return ``dest``.

    ``dest`` must not exist (or be empty), unless ``force``, which replaces it.
    """
    from .pipeline import repo_root

    root = repo_root(root)
    dest = Path(dest).resolve()
    own = [root / d for d in ("labs", "course", "src", "student", "solutions", "tests")]
    if dest == root or any(dest == d or d in dest.parents for d in own):
        raise ValueError(f"{dest} is the course repository or one of its folders: choose a folder of its own")
    if dest.exists() and any(dest.iterdir()):
        if not force:
            raise FileExistsError(f"{dest} exists and is not empty: choose a new folder, or pass --force to replace it")
        shutil.rmtree(dest)
    for rel in HANDOUT:
        if not (root / rel).exists():
            raise FileNotFoundError(f"{root / rel} is missing: the hand-out needs it")
    bad = leaks(root / "labs") + leaks(root / "course")
    if bad:
        raise RuntimeError("refusing to hand out notebooks with solutions or hidden tests (release them with "
                           "gpudl release):\n  " + "\n  ".join(bad))
    dest.mkdir(parents=True, exist_ok=True)
    for rel, to in HANDOUT.items():
        src, target = root / rel, dest / to
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, ignore=_IGNORE)
        else:
            shutil.copy2(src, target)
    return dest
