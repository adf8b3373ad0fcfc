"""The references of graded exercises: one module per lab (``references.lab06`` holds what lab 06
asks students to write), each function marked ``@reference`` and named as the visible checks
ask for it (``gpudl.grading.expected``). Nothing in the course edition computes these answers;
``gpudl handout --answers LAB`` hands a closed lab's module to students with its solution.

Public names: ``module_of``.
"""
from __future__ import annotations

import importlib
from types import ModuleType


def module_of(lab: str) -> ModuleType:
    """The references of ``lab`` ("lab06" or "lab06_lstm_bptt")."""
    return importlib.import_module(f"{__name__}.{lab.split('_')[0]}")
