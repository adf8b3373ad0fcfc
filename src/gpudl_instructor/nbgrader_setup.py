"""How every nbgrader course directory of gpudl is set up: the repository's
``nbgrader_config.py``, the scratch courses of ``gpudl release`` and ``gpudl grade``.

Public names: ``configure_nbgrader``, ``COURSE_ID``, ``DEFAULT_CELL_TIMEOUT``,
``DEFAULT_STUDENT_TIMEOUT``, ``IGNORE_STDERR``, ``SEED_ENV``, ``SECRET_ENV``, ``SECRET_FILE``.
"""
from __future__ import annotations

import os
from typing import Any

COURSE_ID = "gpudl"
SEED_ENV = "GPUDL_GRADING_SEED"     # read by gpudl.grading.rng inside the graded kernel
SECRET_ENV = "GPUDL_SECRET"         # the instructor's secret, from which each student's seed derives
SECRET_FILE = ".gpudl-secret"
from gpudl.labserver import DEFAULT_CELL_TIMEOUT  # noqa: E402 - students' Validate uses the same limit
DEFAULT_STUDENT_TIMEOUT = 1200      # seconds for one student's whole notebook

# stderr chunks to drop before scoring: a test cell that writes to stderr scores 0, and
# warnings or progress bars from libraries are not the student's fault. (`gpudl grade` goes
# further: stderr of a graded test cell becomes stdout, see gpudl_instructor.autograde.QuietTests.)
IGNORE_STDERR = r"(Warning:|warnings\.warn|\d+%\|)"


def configure_nbgrader(c: Any, *, cell_timeout: int | None = None) -> None:
    """The nbgrader settings every course directory of gpudl shares (its nbgrader_config.py
    and the scratch courses of ``gpudl grade``)."""
    c.CourseDirectory.course_id = COURSE_ID
    c.Execute.timeout = int(cell_timeout or os.environ.get("GPUDL_CELL_TIMEOUT", DEFAULT_CELL_TIMEOUT))
    c.Execute.interrupt_on_timeout = True
    c.Execute.startup_timeout = 120
    # The wait for a cell's last output after its reply (nbclient: 4 s, and nbgrader fails the whole
    # notebook past it): a cell that prints megabytes on a machine grading many students needs longer.
    c.Execute.iopub_timeout = 30
    c.IgnorePattern.enabled = True
    c.IgnorePattern.pattern = IGNORE_STDERR
    c.LimitOutput.max_lines = 1000
    c.LimitOutput.max_traceback = 100
    c.OverwriteCells.add_missing_cells = True
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    # Feedback must not show hidden tests.
    c.GenerateFeedback.preprocessors = [
        "nbgrader.preprocessors.GetGrades",
        "nbgrader.preprocessors.ClearHiddenTests",
        "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    ]
