"""nbgrader configuration of the course: solutions/ is the source, labs/ the release.

The settings shared with `gpudl grade` (timeouts, ignored stderr, feedback without hidden
tests, restoring deleted cells) live in gpudl_instructor.nbgrader_setup.configure_nbgrader.
"""
c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

try:
    from gpudl_instructor.nbgrader_setup import configure_nbgrader
except ImportError as exc:  # nbgrader run from an environment without gpudl's instructor part
    raise SystemExit("nbgrader_config.py needs gpudl's instructor part: run `make setup` and use .venv/bin/nbgrader") from exc

configure_nbgrader(c)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
