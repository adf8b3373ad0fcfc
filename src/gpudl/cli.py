"""The ``gpudl`` command: thin wrappers over the package.

    gpudl doctor                    what is installed, which device, its peaks; exit 1 with a fix
    gpudl lab [--port P]            JupyterLab on labs/ with nbgrader's extension
    gpudl release [LAB]             regenerate labs/ from solutions/
    gpudl grade LAB SUBMISSIONS --out DIR
                                    grade a folder of student folders or an LMS zip
    gpudl run-labs --device cuda --report DIR
                                    execute every course notebook and lab, grade the solutions,
                                    and report the units' measurements
    gpudl bench NAME                print a unit's benchmark (see `gpudl bench --list`)
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


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
    for dist, fix in {**required, **optional}.items():
        v = _version(dist)
        print(f"{dist:<11} {v or 'MISSING'}")
        if v is None:
            (problems.append(f"{dist} is missing: {fix}") if dist in required
             else print(f"            ({fix})"))
    if shutil.which("alembic") is None:
        problems.append("alembic is not on PATH (nbgrader needs it to create a gradebook): "
                        "activate the virtual environment or prepend .venv/bin to PATH")
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
    from .sandbox import available
    ok, why = available()
    if ok:
        print("sandbox     bubblewrap works here: `gpudl grade` runs each student's kernel in a sandbox")
    else:
        print(f"sandbox     NOT AVAILABLE: {why}\n            (`gpudl grade` refuses to run student code here unless told "
              "--unsafe-no-sandbox; labs and lectures work without it)")
    try:
        from .pipeline import repo_root, lab_names
        root = repo_root()
        print(f"course      {root}: labs {', '.join(lab_names(root)) or '(none)'}")
    except FileNotFoundError:
        print("course      (not inside the course repository)")
    except ImportError as exc:        # nbformat & co. missing: already listed above
        print(f"course      (cannot read it: {exc})")
    if problems:
        print("\nPROBLEMS:")
        for p in problems:
            print(f"  - {p}")
        return 1
    print("\nall good")
    return 0


def release(args: argparse.Namespace) -> int:
    from .pipeline import release as do_release
    for path in do_release(args.lab or None):
        print(f"released {path}")
    return 0


def grade(args: argparse.Namespace) -> int:
    from .pipeline import grade as do_grade
    limits = {"memory_bytes": int(args.memory_gb * 2**30)} if args.memory_gb else None
    results = do_grade(args.lab, args.submissions, args.out, secret=args.secret, jobs=args.jobs,
                       cell_timeout=args.cell_timeout, student_timeout=args.student_timeout,
                       accept_renamed=args.accept_renamed, feedback=not args.no_feedback,
                       sandbox=not args.unsafe_no_sandbox, limits=limits)
    graded = sum(r.graded for r in results)
    print(f"\n{graded} of {len(results)} graded; grades in {Path(args.out) / 'grades.csv'}, "
          f"feedback in {Path(args.out) / 'feedback'}, gradebook {Path(args.out) / 'gradebook.db'}")
    return 0


def lab(args: argparse.Namespace) -> int:
    from .pipeline import repo_root
    root = repo_root()
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root / 'labs'}"]
    if args.port:
        cmd.append(f"--port={args.port}")
    if args.no_browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")      # containers and CI runners often run as root
    if args.token is not None:
        cmd.append(f"--IdentityProvider.token={args.token}")
    cmd.extend(args.extra)
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    from .hardware import device
    if device() == "cpu":
        # Kernels inherit this: Triton runs in its interpreter even if a notebook imports triton before gpudl.
        env.setdefault("TRITON_INTERPRET", "1")
        env.setdefault("NUMBA_ENABLE_CUDASIM", "1")      # the same for numba-cuda's simulator (unit 04)
    return subprocess.call(cmd, cwd=root, env=env)


def run_labs(args: argparse.Namespace) -> int:
    from .hardware import device
    from .runlabs import run_labs as do_run
    return do_run(device=args.device or device(), report=Path(args.report), only=args.only, timeout=args.timeout,
                  benchmarks=not args.no_bench, root=Path(args.root) if args.root else None)


def bench(args: argparse.Namespace) -> int:
    from . import benchmarks
    if args.list or not args.name:
        for name in benchmarks.names():
            print(f"{name:<16} {benchmarks.summary(name)}")
        return 0
    result = benchmarks.run(args.name, list(args.rest))
    print(result.to_text())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpudl", description="GPUs for Deep Learning: labs, kernels, grading")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("doctor", help="check the installation and the device").set_defaults(fn=doctor)

    p = sub.add_parser("lab", help="open JupyterLab on labs/")
    p.add_argument("--port", type=int)
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--token", help="the server's access token (default: JupyterLab makes one)")
    p.set_defaults(fn=lab)

    p = sub.add_parser("release", help="regenerate labs/ from solutions/")
    p.add_argument("lab", nargs="?", help="one lab (default: all)")
    p.set_defaults(fn=release)

    p = sub.add_parser("grade", help="grade a folder of submissions or an LMS zip")
    p.add_argument("lab")
    p.add_argument("submissions", help="a folder of student folders, or a zip from the LMS")
    p.add_argument("--out", required=True, help="where the gradebook, feedback and grades.csv go")
    p.add_argument("--secret", help="the secret behind hidden tests (default: $GPUDL_SECRET or .gpudl-secret)")
    p.add_argument("--jobs", type=int, help="students graded at once (default: the cores; on a GPU machine, the GPUs)")
    p.add_argument("--cell-timeout", type=int, help="seconds per cell")
    p.add_argument("--student-timeout", type=float, default=1200, help="seconds per student")
    p.add_argument("--accept-renamed", action="store_true", help="grade a lone notebook under another name")
    p.add_argument("--no-feedback", action="store_true")
    p.add_argument("--memory-gb", type=float, help="memory limit of each student's kernel (default 6)")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run student code WITHOUT the sandbox (only where bubblewrap cannot work and you trust "
                        "every submission)")
    p.set_defaults(fn=grade)

    p = sub.add_parser("run-labs", help="execute every notebook, grade the solutions, report")
    p.add_argument("--device", choices=("cpu", "cuda"),
                   help="default: cuda when torch sees a GPU, else cpu (GPU runners pass --device cuda)")
    p.add_argument("--report", default="gpu-report", help="folder for report.json, report.md and plots")
    p.add_argument("--only", action="append", help="only notebooks whose name contains this (repeatable)")
    p.add_argument("--timeout", type=int, default=600, help="seconds per notebook")
    p.add_argument("--no-bench", action="store_true", help="skip the performance table")
    p.add_argument("--root", help="the course repository (default: the one around the current directory)")
    p.set_defaults(fn=run_labs)

    p = sub.add_parser("bench", help="run a unit's benchmark")
    p.add_argument("name", nargs="?")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.add_argument("--list", action="store_true")
    p.set_defaults(fn=bench)

    args, unknown = parser.parse_known_args(argv)
    if args.cmd == "lab":
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


if __name__ == "__main__":
    raise SystemExit(main())
