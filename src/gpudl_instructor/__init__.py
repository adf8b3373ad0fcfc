"""The instructor's part of gpudl: what never leaves the instructor's machine.

The course edition (``gpudl``) is what students receive, what lecture notebooks import and all a
student's kernel can see while it is graded. This package holds everything else, and only it
imports ``gpudl`` (never the reverse):

``references``        the references of graded exercises, one module per lab (``references.lab06``)
``checks``            the hidden cases of every lab's checks, drawn from the instructor's secret,
                      judged against the references (``checks.lab06``)
``expected``          writing the visible cases' expected values (``gpudl/grading/expected/``) at release
``hunt``              the proof that the course edition holds no answer (``gpudl hunt``, ``gpudl handout``)
``inprocess``         a notebook's cells run in this process, scored as nbgrader scores them
``submissions``       finding, inspecting and repairing submissions
``sandbox``           the bubblewrap sandbox a graded kernel runs in (it sees the course edition only)
``checker``           the checker: checks judged outside the sandbox, with the student's seed
``autograde``, ``autograde_server``, ``nbgrader_setup``, ``feedback``
                      one student autograded by nbgrader; the warmed server; nbgrader's settings;
                      sanitized feedback
``pipeline``          release and grading a class
``gpulease``          students sharing a GPU: the exclusive lease a timed check holds, memory bounds
``shards``, ``sweep`` a class split across machines and merged again; the solution under many
                      students' seeds (``gpudl sweep``)
``handout``           the student hand-out (and answers after a deadline)
``formgrader``, ``formgrader_extension``, ``runlabs``, ``cli``
                      nbgrader's formgrader on a grading output (its buttons through gpudl's
                      pipeline); ``gpudl run-labs``; the full command
``benchmarks``        the benchmarks that measure the references or the grader (``gpudl bench grading``,
                      ``classview``, ...), registered with the course edition's ``gpudl bench``
``report``, ``similar``, ``lms``
                      the class report; similar pairs of submissions; grades for Canvas and Moodle
"""
import os as _os

from gpudl import benchmarks as _benchmarks, references as _references

def _register_benchmarks() -> None:
    """Every module of ``gpudl_instructor.benchmarks`` is a ``gpudl bench NAME`` of the instructor's
    command (those that measure the references, and the grader's own)."""
    import pkgutil

    from . import benchmarks

    for info in pkgutil.iter_modules(benchmarks.__path__):
        if not info.name.startswith("_"):
            _benchmarks.EXTRA.setdefault(info.name, f"{benchmarks.__name__}.{info.name}")


_register_benchmarks()
_references.trust(_os.path.dirname(__file__))      # the references call each other freely under the guard
