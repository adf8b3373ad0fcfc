"""What a real GPU says about a kernel: its resources, the driver's occupancy, compute-sanitizer.

The model in ``occupancy`` predicts blocks per SM from a kernel's registers and shared
memory; on a GPU the driver answers the same question for the compiled kernel
(``cuOccupancyMaxActiveBlocksPerMultiprocessor``), and ``compute-sanitizer`` runs it under
its memory checker (``memcheck``: out-of-bounds and misaligned accesses) and race checker
(``racecheck``: shared-memory hazards). Everything here needs a CUDA device and numba-cuda
compiled for it, except ``sanitizer_path``, which only looks for the tool.

Public names, in reading order:
``kernel_resources``   registers per thread and static shared memory of a compiled kernel
``driver_occupancy``   the driver's blocks per SM for a kernel, block size and dynamic shared memory
``sanitizer_path``     compute-sanitizer's path, or None
``kernel_script``      a stand-alone script that launches a kernel on saved arrays (for the sanitizer)
``sanitize``           run one launch under compute-sanitizer tools; ``SanitizerResult`` per tool
"""
from __future__ import annotations

import glob
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..references import refuse_under_a_guard


def _compiled(kernel: Any, args: Sequence[Any] | None = None) -> Any:
    """The compiled overload of a numba-cuda kernel (compiling it for ``args`` if needed)."""
    if args is not None and not kernel.overloads:
        kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))
    if not kernel.overloads:
        raise ValueError(f"{kernel.__name__} is not compiled yet: launch it once, or pass args")
    return next(iter(kernel.overloads.values()))


def kernel_resources(kernel: Any, args: Sequence[Any] | None = None) -> dict[str, int]:
    """Registers per thread, static shared memory per block (bytes) and local memory per
    thread of a compiled numba-cuda kernel, as the driver reports them."""
    overload = _compiled(kernel, args)
    return {"registers": int(overload.regs_per_thread), "shared_bytes": int(overload.shared_mem_per_block),
            "local_bytes": int(overload.local_mem_per_thread)}


def driver_occupancy(kernel: Any, threads_per_block: int, dynamic_shared_bytes: int = 0,
                     args: Sequence[Any] | None = None) -> int:
    """Blocks per SM the driver allows for this kernel (``cuOccupancyMaxActiveBlocksPerMultiprocessor``)."""
    from numba.cuda.cudadrv.devices import get_context  # type: ignore

    cufunc = _compiled(kernel, args)._codelibrary.get_cufunc()
    try:
        value = get_context().get_active_blocks_per_multiprocessor(cufunc, threads_per_block, dynamic_shared_bytes)
    except Exception:  # noqa: BLE001 - fall back to cuda-bindings directly
        from cuda.bindings import driver as cu  # type: ignore

        err, value = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(cufunc.handle, threads_per_block,
                                                                    dynamic_shared_bytes)
        if int(err) != 0:
            raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed: {err}") from None
    return int(value)


def sanitizer_path() -> str | None:
    """compute-sanitizer on PATH or under /usr/local/cuda*, or None."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for path in sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"), reverse=True):
        if os.access(path, os.X_OK):
            return path
    return None


@dataclass(frozen=True)
class SanitizerResult:
    """One compute-sanitizer run: the tool, its error count (-1: it did not run to the end),
    the first lines of its report, and whether it could run at all."""

    tool: str
    errors: int
    excerpt: str
    ran: bool = True

    @property
    def clean(self) -> bool:
        return self.ran and self.errors == 0


def _globals_source(fn: Any, seen: set[int] | None = None) -> tuple[list[str], list[str]]:
    """(lines defining the constants and numba types a kernel's source refers to, sources of
    the device functions it calls)."""
    seen = seen if seen is not None else set()
    consts, devices = [], []
    code = fn.__code__
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= set(const.co_names)
    for name in sorted(names):
        if name not in fn.__globals__:
            continue
        value = fn.__globals__[name]
        if isinstance(value, bool) or isinstance(value, (int, float)):
            consts.append(f"{name} = {value!r}")
        elif _is_numba_type(value):
            consts.append(f"{name} = numba.{value.name}")
        elif hasattr(value, "py_func") and id(value) not in seen:
            seen.add(id(value))
            sub_consts, sub_devices = _globals_source(value.py_func, seen)
            consts += sub_consts
            devices += sub_devices + [_decorated(value.py_func, device=True)]
    return consts, devices


def _is_numba_type(value: Any) -> bool:
    """A numba type such as ``float32`` (numba's own, or numba-cuda's copy of it)."""
    classes = []
    for module in ("numba.core.types", "numba.cuda.types"):
        try:
            classes.append(__import__(module, fromlist=["Type"]).Type)
        except (ImportError, AttributeError):
            pass
    return bool(classes) and isinstance(value, tuple(classes)) and hasattr(value, "name")


def _decorated(fn: Any, device: bool = False) -> str:
    src = textwrap.dedent(inspect.getsource(fn))
    body = re.sub(r"^(\s*@.*\n)+", "", src)
    deco = "@cuda.jit(device=True)" if device else "@cuda.jit(**JIT)"
    return f"{deco}\n{body}"


def kernel_script(kernel: Any, grid: Any, block: Any, args: Sequence[Any], folder: str) -> str:
    """Write ``folder/launch.py``, which rebuilds the kernel from its source and launches it
    once on the arguments (arrays saved beside it); return the script's path."""
    fn = getattr(kernel, "py_func", kernel)
    consts, devices = _globals_source(fn)
    arrays, scalars = {}, {}
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            arrays[f"a{i}"] = a
        else:
            scalars[str(i)] = a.item() if isinstance(a, np.generic) else a
    np.savez(os.path.join(folder, "args.npz"), **arrays)
    with open(os.path.join(folder, "scalars.json"), "w") as f:
        json.dump(scalars, f)
    from ..hardware import configure_numba

    # numba-cuda prepared by gpudl's own function, its source copied in rather than imported: importing
    # gpudl imports torch, a third of the script's time, and it starts once per sanitizer tool and exercise
    lines = ["import json, math, os", "import numpy as np", textwrap.dedent(inspect.getsource(configure_numba)),
             "configure_numba('cuda')", "import numba", "from numba import cuda",
             "# line numbers in the sanitizer's report (the simulator knows no such option)",
             "JIT = {} if os.environ.get('NUMBA_ENABLE_CUDASIM') == '1' else {'lineinfo': True}",
             *consts, *devices, _decorated(fn),
             "here = os.path.dirname(os.path.abspath(__file__))",
             "arrays = np.load(os.path.join(here, 'args.npz'))",
             "scalars = json.load(open(os.path.join(here, 'scalars.json')))",
             f"args = [arrays[f'a{{i}}'] if f'a{{i}}' in arrays.files else scalars[str(i)] for i in range({len(args)})]",
             "args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]",
             f"{fn.__name__}[{tuple(grid) if not isinstance(grid, int) else grid}, "
             f"{tuple(block) if not isinstance(block, int) else block}](*args)",
             "cuda.synchronize()"]
    path = os.path.join(folder, "launch.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
_HAZARDS = re.compile(r"RACECHECK SUMMARY:\s*(\d+)\s+hazard")


def sanitize(kernel: Any, grid: Any, block: Any, args: Sequence[Any],
             tools: Sequence[str] = ("memcheck", "racecheck"), timeout: float = 120.0) -> list[SanitizerResult]:
    """Launch ``kernel[grid, block](*args)`` in a fresh process under each compute-sanitizer
    tool. Without the tool (or a GPU) every result has ``ran=False``."""
    refuse_under_a_guard("gpudl.cuda_model.sanitize", sys._getframe(1))     # it runs code in another process
    exe = sanitizer_path()
    if exe is None:
        return [SanitizerResult(t, -1, "compute-sanitizer not found", ran=False) for t in tools]
    results = []
    with tempfile.TemporaryDirectory(prefix="gpudl-sanitize-") as folder:
        script = kernel_script(kernel, grid, block, [np.asarray(a) if hasattr(a, "shape") else a for a in args],
                               folder)
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
        # the tools run at the same time: each is a process that mostly starts up (Python, numba,
        # a CUDA context under the tool), and one after another they were most of a lab 04 grading
        started: dict[str, Any] = {}
        for tool in tools:
            # API errors that numba's start-up provokes and handles are not the kernel's: only its accesses count
            cmd = [exe, "--tool", tool, "--report-api-errors", "no", "--error-exitcode", "99", "--print-limit", "10",
                   sys.executable, script]
            try:
                started[tool] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                                 env=env)
            except OSError as exc:
                started[tool] = exc
        for tool in tools:
            proc = started[tool]
            if isinstance(proc, OSError):
                results.append(SanitizerResult(tool, -1, f"could not run: {proc}", ran=False))
                continue
            try:
                text, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                proc.kill()
                proc.communicate()
                results.append(SanitizerResult(tool, -1, f"could not run: {exc}", ran=False))
                continue
            m = _SUMMARY.search(text)
            errors = int(m.group(1)) if m else (-1 if proc.returncode not in (0, 99) else 0)
            hazards = _HAZARDS.search(text)
            if hazards:
                errors = max(errors, int(hazards.group(1)))
            lines = [ln for ln in text.splitlines() if ln.startswith("=========") and "SUMMARY" not in ln]
            excerpt = "\n".join(lines[:12]) if errors else (text.strip().splitlines() or [""])[-1]
            # 99 is --error-exitcode: the tool ran and found errors (racecheck prints no "ERROR SUMMARY")
            ran = m is not None or hazards is not None or proc.returncode in (0, 99)
            results.append(SanitizerResult(tool, errors, excerpt, ran=ran))
    return results


__all__ = ["kernel_resources", "driver_occupancy", "sanitizer_path", "SanitizerResult", "kernel_script", "sanitize"]
