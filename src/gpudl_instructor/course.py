"""The course repository: where it is, and its labs.

Public names: ``repo_root``, ``lab_names``.
"""
from __future__ import annotations

import os
from pathlib import Path


def repo_root(start: str | Path | None = None) -> Path:
    """The course repository: the nearest directory upward holding nbgrader_config.py and solutions/."""
    here = Path(start or os.getcwd()).resolve()
    for d in (here, *here.parents):
        if (d / "nbgrader_config.py").is_file() and (d / "solutions").is_dir():
            return d
    raise FileNotFoundError(f"no course repository (nbgrader_config.py + solutions/) at or above {here}")


def lab_names(root: str | Path | None = None) -> list[str]:
    root = repo_root(root)
    return sorted(p.parent.name for p in (root / "solutions").glob("*/*.ipynb") if p.stem == p.parent.name)


def lab_named(lab: str, names: list[str]) -> str:
    """The lab of ``names`` that ``lab`` names: its whole name, or its number ("lab06")."""
    for name in names:
        if lab in (name, name.split("_")[0]):
            return name
    raise ValueError(f"no lab {lab!r} (labs are: {', '.join(names)})")
