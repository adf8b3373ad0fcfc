"""The student hand-out: what students get, and nothing they should not have.

``gpudl handout DIR [--root REPO] [--answers LAB ...]`` writes, from the course repository:

    README.md, Makefile        for students (from the repository's student/ folder)
    START.ipynb                the start page `make lab` opens: the units in order, lectures and labs
    labs/                      the released lab notebooks
    course/                    the lecture notebooks
    src/gpudl/, pyproject.toml, constraints/, environment.yml
                               the course edition of the package, installable with `make lab` or
                               `pip install -e .` (its pyproject names the course edition's command)
    answers/LAB/               only with --answers: a closed lab's solution notebook and the
                               references of its exercises, for the week after the deadline

and never the instructor's part (``src/gpudl_instructor``: references, hidden checks, grader),
``solutions/``, ``tests/`` (with the mutants), the secret, a gradebook, grading outputs, nbgrader's
course config or the CI files. Before writing, every notebook is checked for solution and
hidden-test markers, and the answer hunt (``gpudl_instructor.hunt``) looks for a graded answer in
the course edition: the hand-out is refused while one can be found, except in the labs whose
answers are released on purpose.

Public names: ``handout``, ``HANDOUT``, ``LEAK_MARKERS``, ``leaks``, ``course_pyproject``.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Sequence

# What the hand-out holds: repository path -> hand-out path.
HANDOUT = {
    "student/README.md": "README.md",
    "student/Makefile": "Makefile",
    "START.ipynb": "START.ipynb",
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


def course_pyproject(text: str) -> str:
    """The repository's pyproject.toml as the hand-out needs it: the ``gpudl`` command of the course
    edition, and the course edition's package only."""
    lines = []
    for line in text.splitlines():
        if line.startswith("gpudl = ") and "gpudl_instructor" in line:
            line = 'gpudl = "gpudl.cli:main"'
        lines.append(line)
    out = "\n".join(lines) + "\n"
    out = out.replace('[tool.setuptools.packages.find]\nwhere = ["src"]',
                      '[tool.setuptools.packages.find]\nwhere = ["src"]\ninclude = ["gpudl", "gpudl.*"]')
    if "gpudl_instructor" in out:
        raise RuntimeError("pyproject.toml names gpudl_instructor where the hand-out cannot rewrite it")
    return out


def _answers(root: Path, dest: Path, labs: list[str]) -> None:
    """answers/LAB/: the solution notebook and the references of each closed lab."""
    from . import references

    for lab in labs:
        folder = dest / "answers" / lab
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / "solutions" / lab / f"{lab}.ipynb", folder / f"{lab}_solution.ipynb")
        module = references.module_of(lab)
        shutil.copy2(module.__file__, folder / f"{lab.split('_')[0]}_references.py")


def _hunt(root: Path, released: list[str]) -> None:
    """Refuse when the course edition holds an answer of a lab not released on purpose."""
    from . import hunt
    from .course import lab_names

    labs = [lab for lab in lab_names(root) if lab not in released and lab not in hunt.PENDING]
    refused = hunt.hunt(labs, root, progress=lambda line: print(line, file=sys.stderr, flush=True)) if labs else []
    if refused:
        raise RuntimeError("refusing to hand out answers: the course edition holds what scores on the hidden "
                           "checks (move it to gpudl_instructor)\n  " + "\n  ".join(f.line() for f in refused))
    for lab in sorted(set(hunt.PENDING) - set(released)):
        print(f"warning: {lab}: answers still in the course edition ({hunt.PENDING[lab]})", file=sys.stderr)


def handout(dest: str | Path, root: str | Path | None = None, *, force: bool = False,
            answers: Sequence[str] = (), hunt: bool = True) -> Path:
    """Write the student hand-out of the course repository ``root`` into ``dest``; return ``dest``.

    ``dest`` must not exist (or be empty), unless ``force``, which replaces it. ``answers`` names
    closed labs whose solutions and references go into ``answers/``. ``hunt=False`` skips the
    answer hunt (the tests of this module only; ``gpudl handout`` always hunts).
    """
    from .course import lab_named, lab_names, repo_root

    root = repo_root(root)
    names = lab_names(root)
    released = []
    for lab in answers:
        try:
            released.append(lab_named(lab, names))
        except ValueError as exc:
            raise ValueError(f"--answers: {exc}") from None
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
    if hunt:
        _hunt(root, released)
    dest.mkdir(parents=True, exist_ok=True)
    for rel, to in HANDOUT.items():
        src, target = root / rel, dest / to
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, ignore=_IGNORE)
        elif rel == "pyproject.toml":
            target.write_text(course_pyproject(src.read_text(encoding="utf-8")), encoding="utf-8")
        else:
            shutil.copy2(src, target)
    _answers(root, dest, released)
    return dest
