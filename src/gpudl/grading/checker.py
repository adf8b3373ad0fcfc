"""The checker of ``gpudl grade``: checks run here, outside the student's sandbox.

(Being built: the kernel side connects to the checker named by ``GPUDL_CHECKER``; until
then every check runs locally.)
"""
from __future__ import annotations

import os
from typing import Any

CHECKER_ENV = "GPUDL_CHECKER"


def remote_enabled() -> bool:
    """True in a student's kernel under ``gpudl grade``: checks go to the checker."""
    return bool(os.environ.get(CHECKER_ENV))


def run_remote(name: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    raise NotImplementedError("the remote checker is not built yet")
