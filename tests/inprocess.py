"""The in-process autograder the mutant bank uses lives in the instructor's part."""
from gpudl_instructor.inprocess import autograde, execute, to_run  # noqa: F401
