"""The ``gpudl`` command of the course edition: what students run.

    gpudl doctor                    what is installed, which device, its peaks; exit 1 with a fix
    gpudl lab [--port P]            JupyterLab for students on the course (labs/ and course/), with Validate
    gpudl bench NAME                print a unit's benchmark (see `gpudl bench --list`)

The instructor's repository installs ``gpudl`` from ``gpudl_instructor.cli``, which adds the
instructor's commands (release, grade, handout, formgrader, run-labs) to these.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Any


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def find_alembic(executable: str | None = None, path: str | None = None) -> str | None:
    """alembic as gpudl's grading finds it: next to the interpreter (which the grader puts first on
    PATH for nbgrader, so `.venv/bin/gpudl` works without activating the venv), else on PATH."""
    bindir = str(Path(executable or sys.executable).parent)
    path = os.environ.get("PATH", "") if path is None else path
    return shutil.which("alembic", path=bindir + os.pathsep + path)


def check_distributions(fixes: dict[str, str]) -> list[str]:
    """Print each distribution of ``fixes`` ({distribution: how to install it}) with its version
    (or MISSING); return "DIST is missing: FIX" for each one missing."""
    missing = []
    for dist, fix in fixes.items():
        v = _version(dist)
        print(f"{dist:<11} {v or 'MISSING'}")
        if v is None:
            missing.append(f"{dist} is missing: {fix}")
    return missing


def doctor(_args: argparse.Namespace) -> int:
    problems: list[str] = []
    print(f"python      {platform.python_version()} ({sys.executable})")
    required = {
        "torch": "pip install 'torch>=2.1' (on a CPU-only machine: make setup pins the CPU build)",
        "numpy": "pip install numpy",
        "matplotlib": "pip install matplotlib",
        "nbgrader": "pip install 'nbgrader>=0.9.6,<0.10'",
        "nbclient": "pip install nbclient",
        "ipykernel": "pip install ipykernel",
        "tqdm": "pip install tqdm",
    }
    optional = {"triton": "pip install triton (Linux); the Triton exercises need it",
                "jupyterlab": "pip install 'jupyterlab>=4,<5' (only to open the labs in a browser)"}
    problems += check_distributions(required)
    for fix in check_distributions(optional):
        print(f"            ({fix.partition(': ')[2]})")
    if find_alembic() is None:
        problems.append("alembic is neither on PATH nor next to this Python (nbgrader needs it to create a "
                        "gradebook): reinstall nbgrader (pip install 'nbgrader>=0.9.6,<0.10') in this environment")
    try:
        from . import hardware
        dev = hardware.device()
    except Exception as exc:  # noqa: BLE001 - doctor reports, never crashes
        problems.append(f"cannot choose a device: {exc}")
        dev = "?"
    print(f"device      {dev}")
    if dev == "cuda":
        import torch

        spec = hardware.detect()
        print(f"gpu         {torch.cuda.get_device_name(0)}; torch CUDA {torch.version.cuda}; "
              f"driver {hardware.nvidia_smi('driver_version') or '?'}")
        print("            " + spec.summary().replace("\n", "\n            "))
        print("triton      compiled kernels on the GPU" + ("" if os.environ.get("TRITON_INTERPRET") != "1"
                                                          else " (TRITON_INTERPRET=1 is set: interpreter!)"))
    elif dev == "cpu":
        print(f"cpu         {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
        print("triton      interpreter on the CPU (TRITON_INTERPRET=1)")
        # torch.compile (Unit 09's fusion) generates C++ on a CPU: it needs a compiler.
        cxx = next((shutil.which(c) for c in (os.environ.get("CXX", ""), "g++", "c++", "clang++") if c and shutil.which(c)),
                   None)
        print(f"c++         {cxx or 'MISSING'} (torch.compile on the CPU"
              f"{'' if cxx else ' is skipped; install g++ or clang++ to run it'})")
    for extra in getattr(_args, "doctor_extra", ()):
        problems += extra()
    if not getattr(_args, "doctor_extra", ()):
        from .labserver import course_root
        try:
            root = course_root()
            labs = sorted(p.parent.name for p in (root / "labs").glob("*/*.ipynb") if p.stem == p.parent.name)
            print(f"course      {root} (hand-out): labs {', '.join(labs)}")
        except FileNotFoundError:
            print("course      (not inside the course repository or a hand-out)")
    if problems:
        print("\nPROBLEMS:")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nall good")
    return 0


def lab(args: argparse.Namespace) -> int:
    from . import labserver
    return labserver.serve_lab(port=args.port, no_browser=args.no_browser, token=args.token, extra=args.extra)


def bench(args: argparse.Namespace) -> int:
    from . import benchmarks
    if args.list or not args.name:
        for name in benchmarks.names():
            print(f"{name:<16} {benchmarks.summary(name)}")
        return 0
    result = benchmarks.run(args.name, list(args.rest))
    print(result.to_text())
    return 0


def parser() -> tuple[argparse.ArgumentParser, Any]:
    """The course edition's parser and its subparsers (the instructor's CLI adds its commands)."""
    parser = argparse.ArgumentParser(prog="gpudl", description="GPUs for Deep Learning: labs, kernels, grading")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="check the installation and the device").set_defaults(fn=doctor)

    p = sub.add_parser("lab", help="open JupyterLab for students on the course (labs/ and course/)")
    p.add_argument("--port", type=int)
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--token", help="the server's access token (default: JupyterLab makes one)")
    p.set_defaults(fn=lab)

    p = sub.add_parser("bench", help="run a unit's benchmark")
    p.add_argument("name", nargs="?")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.add_argument("--list", action="store_true")
    p.set_defaults(fn=bench)
    return parser, sub


PASS_THROUGH = {"lab", "formgrader"}      # commands whose unknown options go on to jupyter lab


def run(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> int:
    """Parse ``argv`` with ``parser`` and run the command; an error a user can fix is one line."""
    args, unknown = parser.parse_known_args(argv)
    if args.cmd in PASS_THROUGH:
        args.extra = unknown            # e.g. --ServerApp.ip=127.0.0.1, passed on to jupyter lab
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return args.fn(args)
    except (OSError, ValueError, RuntimeError) as exc:
        # A wrong lab name, a missing folder, no GPU: the message says what to do; a traceback
        # would bury it. GPUDL_DEBUG=1 shows the traceback.
        if os.environ.get("GPUDL_DEBUG"):
            raise
        print(f"gpudl {args.cmd}: error: {exc}\n(GPUDL_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    return run(parser()[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
