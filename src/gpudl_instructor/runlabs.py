"""Execute every notebook of the course on a device, grade the solutions there, and report.

``gpudl run-labs --device cuda --report DIR`` (the GPU runner's job) or ``--device cpu``:

1. every lecture notebook under ``course/`` is executed (``GPUDL_DEVICE`` set, so notebooks size
   their problems for the device), its wall time and first failing cell recorded;
2. every lab under ``solutions/`` is autograded by nbgrader as a student would be; anything
   short of full marks is a failure, with the failing test cells named;
3. every benchmark of ``gpudl.benchmarks`` (``--quick`` on a CPU) runs in a child process and
   its table (and figures) go into the report;
4. ``DIR/report.json`` and ``DIR/report.md`` describe the device (name, driver, CUDA, torch,
   triton, peaks), each notebook, and the performance tables. The exit status is 1 when any
   notebook failed or any solution lost points.

``python -m gpudl_instructor.runlabs bench NAME OUT.json [ARGS...]`` is the child that runs one benchmark.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from . import pipeline
from gpudl.table import Table

SECRET = "gpudl-run-labs"     # solutions must pass any seed; a fixed one keeps reports reproducible


@dataclass
class NotebookRun:
    name: str
    kind: str                     # "course" or "lab"
    ok: bool
    seconds: float
    score: float | None = None
    max_score: float | None = None
    failed_cell: int | None = None
    cell_source: str = ""
    error: str = ""
    notes: list[str] = field(default_factory=list)


def device_info(device: str) -> dict[str, Any]:
    """Name, driver, CUDA, library versions and peaks of the device the run uses."""
    from gpudl import hardware

    info: dict[str, Any] = {"device": device, "python": platform.python_version(), "host": platform.node()}
    for dist in ("torch", "triton", "numpy", "nbgrader"):
        try:
            info[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            info[dist] = None
    if device == "cuda":
        import torch

        spec = hardware.detect()
        info.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda,
                    driver=hardware.nvidia_smi("driver_version"), spec=spec.name, estimated=spec.estimated,
                    bandwidth_gbs=spec.memory_bandwidth_gbs)
        peaks = {}
        for dt in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8"):
            try:
                peaks[dt] = hardware.peak_flops(spec, dt) / 1e12
            except ValueError:
                pass
        info["peak_tflops"] = peaks
    else:
        info.update(cpu=platform.processor() or platform.machine(), cores=os.cpu_count())
    return info


def _first_error(nb: nbformat.NotebookNode) -> tuple[int | None, str, str]:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                tb = "\n".join(out.get("traceback", []))
                tb = re.sub(r"\x1b\[[0-9;]*m", "", tb)          # strip ANSI colours
                return index, cell.source, f"{out.get('ename')}: {out.get('evalue')}\n{tb[-2500:]}"
    return None, "", ""


def run_course_notebook(path: Path, env: dict[str, str], timeout: int, workdir: Path) -> tuple[NotebookRun, nbformat.NotebookNode]:
    """Execute one lecture notebook in a fresh kernel with ``env``; never raises."""
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, DeadKernelError

    nb = nbformat.read(str(path), as_version=4)
    start = time.monotonic()
    old = dict(os.environ)
    os.environ.update(env)
    # IPC (Unix sockets in workdir) rather than TCP: private to this machine, and ipykernel
    # does not warn about unencrypted TCP on stderr for every notebook. A kernel manager we
    # make is ours to shut down.
    km = KernelManager(kernel_name="python3", transport="ipc", ip=str(workdir / "kernel"))
    try:
        client = NotebookClient(nb, km=km, timeout=timeout, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(workdir)}})
        client.execute()
        error = None
    except (CellExecutionError, DeadKernelError, TimeoutError, RuntimeError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a report records failures, it does not stop on them
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
        os.environ.clear()
        os.environ.update(old)
    seconds = time.monotonic() - start
    cell, source, err = _first_error(nb)
    run = NotebookRun(path.stem, "course", ok=error is None and cell is None, seconds=seconds,
                      failed_cell=cell, cell_source=source[:600], error=err or (error or ""))
    return run, nb


def run_lab(lab: str, root: Path, env: dict[str, str], workdir: Path, cell_timeout: int) -> NotebookRun:
    """Autograde the solution of ``lab`` like a submission; full marks expected."""
    start = time.monotonic()
    try:
        course = workdir / lab
        pipeline.generate(lab, root, course / "course", cell_timeout=cell_timeout)
        base = course / "base.db"
        base.write_bytes((course / "course" / "gradebook.db").read_bytes())
        solution = root / "solutions" / lab / f"{lab}.ipynb"
        result, _ = pipeline.autograde_student(lab, "solution", solution, base, course / "students",
                                               seed=pipeline.student_seed(SECRET, lab, "solution"),
                                               cell_timeout=cell_timeout, extra_env=env)
    except Exception as exc:  # noqa: BLE001
        return NotebookRun(lab, "lab", False, time.monotonic() - start, error=f"{type(exc).__name__}: {exc}\n"
                           + traceback.format_exc()[-1500:])
    seconds = time.monotonic() - start
    full = result.graded and result.score == result.max_score
    run = NotebookRun(lab, "lab", ok=full, seconds=seconds, score=result.score, max_score=result.max_score,
                      notes=result.notes)
    if not result.graded:
        run.error = result.reason
    elif result.autograded:
        cell, source, err = _first_error(nbformat.read(str(result.autograded), as_version=4))
        run.failed_cell, run.cell_source, run.error = cell, source[:600], err
    return run


def run_benchmark(name: str, argv: list[str], env: dict[str, str], report: Path, timeout: int) -> dict[str, Any]:
    """Run one benchmark in a child process (a crash or hang cannot take the report down)."""
    out = report / f"bench_{name}.json"
    cmd = [sys.executable, "-m", "gpudl_instructor.runlabs", "bench", name, str(out), *argv]
    start = time.monotonic()
    try:
        res = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)
        ok, log = res.returncode == 0 and out.exists(), (res.stdout + res.stderr)[-3000:]
    except subprocess.TimeoutExpired as exc:
        ok, log = False, f"timed out after {timeout} s\n{(exc.stdout or '')[-2000:] if isinstance(exc.stdout, str) else ''}"
    entry: dict[str, Any] = {"name": name, "ok": ok, "seconds": round(time.monotonic() - start, 1)}
    if ok:
        entry.update(json.loads(out.read_text()))
    else:
        entry["error"] = log
    return entry


def _bench_child(name: str, out: str, argv: list[str]) -> int:
    from gpudl import benchmarks

    table = benchmarks.run(name, argv)
    data = table.to_json()
    report = Path(out).parent
    data["figures"] = []
    for stem, fig in table.figures.items():
        png = report / f"{name}_{stem}.png"
        fig.savefig(png, dpi=110, bbox_inches="tight")
        data["figures"].append(png.name)
    Path(out).write_text(json.dumps(data, indent=2, default=str))
    print(table.to_text())
    return 0


def write_markdown(report: Path, info: dict[str, Any], runs: list[NotebookRun], benches: list[dict[str, Any]],
                   total: float) -> Path:
    lines = [f"# gpudl run-labs report ({info['device']})", ""]
    if info["device"] == "cuda":
        lines.append(f"**Device:** {info['gpu']} (spec {info['spec']}{', estimated' if info.get('estimated') else ''}), "
                     f"driver {info['driver']}, CUDA {info['cuda']}, torch {info['torch']}, triton {info['triton']}.")
        lines.append("**Peaks (dense TFLOP/s):** " + ", ".join(f"{k} {v:.1f}" for k, v in info["peak_tflops"].items())
                     + f"; DRAM {info['bandwidth_gbs']:.0f} GB/s.")
    else:
        lines.append(f"**Device:** CPU {info['cpu']}, {info['cores']} cores; torch {info['torch']}, "
                     f"triton {info['triton']} (interpreter).")
    failed = [r for r in runs if not r.ok]
    lines += ["", f"**Result:** {len(runs) - len(failed)} of {len(runs)} notebooks passed in {total:.0f} s."
              + (" FAILURES below." if failed else ""), "", "## Notebooks", "",
              "| notebook | kind | result | score | seconds |", "|---|---|---|---|---|"]
    for r in runs:
        score = f"{r.score:g}/{r.max_score:g}" if r.max_score is not None else ""
        lines.append(f"| {r.name} | {r.kind} | {'ok' if r.ok else '**FAILED**'} | {score} | {r.seconds:.1f} |")
    for r in failed:
        lines += ["", f"### {r.name} failed", ""]
        if r.failed_cell is not None:
            lines += [f"Cell {r.failed_cell}:", "", "```python", r.cell_source.strip(), "```", ""]
        if r.error:
            lines += ["```", r.error.strip()[-3000:], "```"]
        if r.notes:
            lines += ["", "Notes: " + "; ".join(r.notes)]
    if benches:
        lines += ["", "## Performance", ""]
        for b in benches:
            if not b["ok"]:
                lines += [f"### {b['name']}: FAILED", "", "```", b["error"].strip()[-2000:], "```", ""]
                continue
            lines += [Table(b["title"], b["rows"], b["notes"]).to_markdown(), ""]
            lines += [f"![{fig}]({fig})" for fig in b.get("figures", [])] + [""]
    path = report / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_labs(device: str = "cuda", report: Path = Path("gpu-report"), only: list[str] | None = None,
             timeout: int = 600, benchmarks: bool = True, root: Path | None = None, echo=print) -> int:
    root = pipeline.repo_root(root)
    report = Path(report).resolve()
    report.mkdir(parents=True, exist_ok=True)
    from gpudl import hardware
    if device == "cuda" and not hardware.cuda_available():
        raise RuntimeError("--device cuda, but torch sees no CUDA device (a CPU build of torch? `gpudl doctor` "
                           "tells); on a machine without a GPU, run with --device cpu")
    env = {"GPUDL_DEVICE": device, "MPLBACKEND": "Agg"}
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    os.environ.update(env)
    info = device_info(device)
    echo(f"run-labs on {info['gpu']}" if "gpu" in info else
         f"run-labs on the CPU ({info['cpu']}, {info['cores']} cores; Triton in its interpreter)")
    start = time.monotonic()

    def wanted(name: str) -> bool:
        return not only or any(o in name for o in only)

    runs: list[NotebookRun] = []
    executed = report / "notebooks"
    executed.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpudl-run-labs-") as tmp:
        work = Path(tmp)
        for path in sorted((root / "course").glob("*.ipynb")):
            if not wanted(path.stem):
                continue
            run, nb = run_course_notebook(path, env, timeout, work)
            nbformat.write(nb, str(executed / path.name))
            runs.append(run)
            echo(f"{'ok    ' if run.ok else 'FAILED'} course {run.name} ({run.seconds:.1f} s)" + ("" if run.ok else f": cell {run.failed_cell}: {run.error.splitlines()[0] if run.error else ''}"))
        for lab in pipeline.lab_names(root):
            if not wanted(lab):
                continue
            run = run_lab(lab, root, env, work, cell_timeout=timeout)
            runs.append(run)
            echo(f"{'ok    ' if run.ok else 'FAILED'} lab    {lab} {run.score}/{run.max_score} ({run.seconds:.1f} s)"
                 + ("" if run.ok else f": {run.error.splitlines()[0] if run.error else run.notes}"))
    benches: list[dict[str, Any]] = []
    if benchmarks:
        from gpudl import benchmarks as registry
        for name in registry.names():
            if only and not wanted(name):
                continue
            entry = run_benchmark(name, [] if device == "cuda" else ["--quick"], env, report, timeout)
            benches.append(entry)
            echo(f"{'ok    ' if entry['ok'] else 'FAILED'} bench  {name} ({entry['seconds']} s)")
    total = time.monotonic() - start
    (report / "report.json").write_text(json.dumps(
        {"device": info, "seconds": round(total, 1), "notebooks": [asdict(r) for r in runs], "benchmarks": benches},
        indent=2, default=str))
    md = write_markdown(report, info, runs, benches, total)
    failed = [r.name for r in runs if not r.ok] + [b["name"] for b in benches if not b["ok"]]
    echo(f"{len(runs) - sum(not r.ok for r in runs)}/{len(runs)} notebooks ok in {total:.0f} s; report: {md}")
    if failed:
        echo("FAILED: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "bench":
        raise SystemExit(_bench_child(sys.argv[2], sys.argv[3], sys.argv[4:]))
    print("usage: python -m gpudl_instructor.runlabs bench NAME OUT.json [ARGS...]", file=sys.stderr)
    raise SystemExit(2)
