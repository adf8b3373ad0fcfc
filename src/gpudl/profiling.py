"""Profiles as tables: a real ``torch.profiler`` trace summarised the way Nsight Systems does.

Nsight Systems' ``nsys stats`` turns a trace into tables; the lecture shows two of them for a
ResNet-50: ``gpukernsum``, one row per kernel name (time %, total, instances, average, median,
min, max, standard deviation), and ``nvtxkernsum``, the same per NVTX range. Here a trace is a
list of *kernel events*, plain dicts, one per kernel run::

    {"name": "aten::native_batch_norm", "start_ns": 1234, "duration_ns": 7825, "range": "layer1",
     "range_id": 3, "device": "cpu"}

On a GPU the kernels are the CUDA kernels the profiler saw (memory copies and memsets are not:
``nsys`` reports those in ``gpumemtimesum``). On a CPU each innermost ATen operator that does
work stands in for a kernel (``aten::mkldnn_convolution``, ``aten::native_batch_norm``, ...);
allocations, views and fills are left out. ``range`` is the innermost ``record_function`` /
NVTX range around the launch ("" outside any), ``range_id`` tells its occurrences apart.

Public names, in reading order:

``range_summary``                  (reference) events -> rows per (range, kernel): nvtxkernsum
``KernelRow``                      one row of it, or of gpukernsum (one row per kernel name: Lab 09
                                   builds that table from the events)
``arithmetic_problems``, ``check_summary``   the tables' own checks (total = instances x average,
                                   min <= median, average <= max, shares summing to 100%)
``format_table``                   a table as text, columns as nsys prints them
``nvtx_available``, ``nvtx_range`` a named range: ``record_function`` for torch.profiler, and an
                                   NVTX range for Nsight where the build has NVTX
``record``, ``profile_events``, ``events_from_profile``   run work under torch.profiler (the
                                   profiler itself, whose ``key_averages()`` is torch's own summary;
                                   or its kernels as events)
``small_resnet``                   a few residual blocks (conv, BN, ReLU, add: the lecture's top
                                   kernels), each block in a named range, to profile and to batch
``LECTURE_GPUKERNSUM``, ``LECTURE_NVTXKERNSUM``, ``lecture_rows``   the lecture's ResNet-50 rows
                                   as printed, and what their printed totals and counts imply
``NCU_BYTES``, ``ncu_path``, ``ncu_command``, ``parse_ncu_csv``, ``ncu_metrics``, ``NcuError``
                                   Nsight Compute's metrics of the kernels a Python snippet launches
"""
from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import shutil
import statistics
import subprocess
import sys
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .references import reference, refuse_under_a_guard

# --- the tables -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelRow:
    """One row of ``gpukernsum`` (``range`` empty) or ``nvtxkernsum``. Times in nanoseconds;
    ``time_pct`` is the row's share of all kernel time in the table, in percent."""

    name: str
    instances: int
    total_ns: float
    avg_ns: float
    med_ns: float
    min_ns: float
    max_ns: float
    stddev_ns: float = 0.0
    time_pct: float = 0.0
    range: str = ""
    range_instances: int = 0

    def __post_init__(self) -> None:
        if self.instances < 1:
            raise ValueError(f"{self.name}: a row needs at least one instance, got {self.instances}")
        for field_name in ("total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns", "time_pct"):
            v = getattr(self, field_name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ValueError(f"{self.name}: {field_name} must be a finite number >= 0, got {v!r}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _kernels(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    out = []
    for e in events:
        if "name" not in e or "duration_ns" not in e:
            raise ValueError(f"an event needs 'name' and 'duration_ns', got {sorted(e)}")
        if not (e["duration_ns"] >= 0):
            raise ValueError(f"{e['name']}: negative duration {e['duration_ns']}")
        out.append(e)
    return out


def _row(name: str, durations: Sequence[float], grand_total: float, **extra: Any) -> KernelRow:
    total = float(sum(durations))
    n = len(durations)
    return KernelRow(name=name, instances=n, total_ns=total, avg_ns=total / n,
                     med_ns=float(statistics.median(durations)), min_ns=float(min(durations)),
                     max_ns=float(max(durations)), stddev_ns=float(statistics.stdev(durations)) if n > 1 else 0.0,
                     time_pct=100.0 * total / grand_total if grand_total > 0 else 0.0, **extra)


@reference
def range_summary(events: Iterable[Mapping[str, Any]]) -> list[KernelRow]:
    """``nsys stats --report nvtxkernsum``: one row per (range, kernel name), ranges in order of
    their total kernel time, kernels within a range by decreasing total. ``range_instances``
    counts the occurrences of the range (distinct ``range_id``); ``time_pct`` is the share of
    the range's kernel time. Kernels outside every range are left out, as nsys does."""
    groups: dict[str, dict[str, list[float]]] = {}
    occurrences: dict[str, set] = {}
    for e in _kernels(events):
        rng = str(e.get("range", ""))
        if not rng:
            continue
        groups.setdefault(rng, {}).setdefault(str(e["name"]), []).append(float(e["duration_ns"]))
        occurrences.setdefault(rng, set()).add(e.get("range_id", rng))
    totals = {r: sum(sum(d) for d in g.values()) for r, g in groups.items()}
    rows = []
    for rng in sorted(groups, key=lambda r: (-totals[r], r)):
        rows.extend(sorted((_row(name, d, totals[rng], range=rng, range_instances=len(occurrences[rng]))
                            for name, d in groups[rng].items()), key=lambda r: (-r.total_ns, r.name)))
    return rows


def arithmetic_problems(rows: Sequence[KernelRow], *, rel: float = 1e-9, abs_ns: float = 0.0,
                        shares_sum_to_100: bool = True) -> list[str]:
    """What is inconsistent in a table: each row's total against instances x average (within
    ``rel`` of the total plus ``abs_ns``: pass the printed precision for printed tables), min <=
    median <= max, min <= average <= max, and (for a whole table) shares summing to 100%.
    An empty list means the table checks out."""
    problems = []
    for r in rows:
        slack = rel * r.total_ns + abs_ns
        if abs(r.instances * r.avg_ns - r.total_ns) > slack:
            problems.append(f"{r.name}: {r.instances} x {r.avg_ns:g} = {r.instances * r.avg_ns:g}, "
                            f"but the total is {r.total_ns:g}")
        lo, hi = r.min_ns * (1 - rel), r.max_ns * (1 + rel)
        for what, v in (("median", r.med_ns), ("average", r.avg_ns)):
            if not lo <= v <= hi:
                problems.append(f"{r.name}: {what} {v:g} outside [min {r.min_ns:g}, max {r.max_ns:g}]")
    if shares_sum_to_100 and rows:
        for rng in dict.fromkeys(r.range for r in rows):
            share = sum(r.time_pct for r in rows if r.range == rng)
            if abs(share - 100.0) > 1e-6 * 100:
                problems.append(f"shares{' in ' + rng if rng else ''} sum to {share:.6g}%, not 100%")
    return problems


def check_summary(rows: Sequence[KernelRow], **kwargs: Any) -> None:
    """Raise ``ValueError`` listing ``arithmetic_problems(rows)``, if any."""
    problems = arithmetic_problems(rows, **kwargs)
    if problems:
        raise ValueError("the table does not add up:\n  " + "\n  ".join(problems))


def format_table(rows: Sequence[KernelRow], *, width: int = 60) -> str:
    """The rows as nsys prints them (names cut to ``width`` characters)."""
    ranged = any(r.range for r in rows)
    head = (["Range", "Inst"] if ranged else []) + ["Time (%)", "Total (ns)", "Instances", "Avg (ns)", "Med (ns)",
                                                    "Min (ns)", "Max (ns)", "StdDev (ns)", "Name"]
    body = [([r.range, str(r.range_instances)] if ranged else []) +
            [f"{r.time_pct:.1f}", f"{r.total_ns:,.0f}", str(r.instances), f"{r.avg_ns:,.1f}", f"{r.med_ns:,.1f}",
             f"{r.min_ns:,.0f}", f"{r.max_ns:,.0f}", f"{r.stddev_ns:,.1f}",
             r.name if len(r.name) <= width else r.name[:width - 3] + "..."] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) if i == len(cells) - 1 or (ranged and i == 0)  # noqa: E731
                                   else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(b) for b in body])


# --- ranges ----------------------------------------------------------------------------------

_NVTX: bool | None = None


def nvtx_available() -> bool:
    """Whether ``torch.cuda.nvtx`` works in this build (a CPU build of torch has no NVTX)."""
    global _NVTX
    if _NVTX is None:
        try:
            import torch

            torch.cuda.nvtx.range_push("gpudl")
            torch.cuda.nvtx.range_pop()
            _NVTX = True
        except (RuntimeError, AttributeError, OSError):
            _NVTX = False
    return _NVTX


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """A named range: ``torch.profiler.record_function`` (torch.profiler's tables) and, where the
    build has NVTX, ``torch.cuda.nvtx.range_push``/``range_pop`` (Nsight Systems' timeline and
    its ``nvtxkernsum``)."""
    import torch

    pushed = nvtx_available()
    if pushed:
        torch.cuda.nvtx.range_push(name)
    try:
        with torch.profiler.record_function(name):
            yield
    finally:
        if pushed:
            torch.cuda.nvtx.range_pop()


# --- a real trace --------------------------------------------------------------------------------

# ATen operators that do no arithmetic on the CPU: allocation, views and metadata, and fills
# (which nsys would report as memsets, not kernels).
NO_WORK = frozenset({
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::resize_", "aten::as_strided",
    "aten::as_strided_", "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::t",
    "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as", "aten::unsqueeze", "aten::squeeze",
    "aten::select", "aten::slice", "aten::alias", "aten::detach", "aten::detach_", "aten::lift_fresh",
    "aten::numpy_T", "aten::contiguous", "aten::fill_", "aten::zero_", "aten::zeros", "aten::ones",
    "aten::zeros_like", "aten::ones_like", "aten::flatten", "aten::view_as", "aten::unbind", "aten::split",
    "aten::chunk", "aten::narrow", "aten::result_type", "aten::_has_compatible_shallow_copy_type",
    "aten::resolve_conj", "aten::resolve_neg",
})


def _is_range(evt: Any) -> bool:
    return bool(getattr(evt, "is_user_annotation", False))


def _work(evt: Any) -> bool:
    return not _is_range(evt) and evt.name not in NO_WORK and evt.name.startswith("aten::")


def _innermost_range(evt: Any) -> tuple[str, int]:
    p = getattr(evt, "cpu_parent", None)
    while p is not None:
        if _is_range(p):
            return p.name, int(p.id)
        p = p.cpu_parent
    return "", -1


def _has_work_below(evt: Any) -> bool:
    return any(_work(c) or _has_work_below(c) for c in evt.cpu_children)


def _event(name: str, start_us: float, end_us: float, rng: tuple[str, int], device: str) -> dict[str, Any]:
    return {"name": name, "start_ns": int(round(start_us * 1000)),
            "duration_ns": max(int(round((end_us - start_us) * 1000)), 0),
            "range": rng[0], "range_id": rng[1], "device": device}


def events_from_profile(prof: Any, device: str = "cpu") -> list[dict[str, Any]]:
    """The kernel events of a finished ``torch.profiler.profile`` (see the module docstring),
    in order of start time. ``device`` "cuda": the GPU's kernels; "cpu": the innermost working
    ATen operators."""
    from torch.autograd import DeviceType

    evts = list(prof.events())
    out = []
    if device == "cpu":
        for e in evts:
            if e.device_type == DeviceType.CPU and _work(e) and not _has_work_below(e):
                out.append(_event(e.name, e.time_range.start, e.time_range.end, _innermost_range(e), "cpu"))
    elif str(device).startswith("cuda"):
        ops = {e.id: e for e in evts if e.device_type == DeviceType.CPU and not _is_range(e)
               and getattr(e, "linked_correlation_id", 0) == 0}
        spans = [e for e in evts if e.device_type == DeviceType.CUDA and _is_range(e)]   # ranges on the GPU's clock
        for e in evts:
            if e.device_type != DeviceType.CUDA or _is_range(e) or e.name.startswith(("Memcpy", "Memset")):
                continue
            launcher = ops.get(getattr(e, "linked_correlation_id", 0))
            rng = _innermost_range(launcher) if launcher is not None else ("", -1)
            if launcher is not None and _is_range(launcher):
                rng = (launcher.name, int(launcher.id))
            if not rng[0]:                      # no ATen op launched it (a Triton kernel): the GPU-side range
                inside = [s for s in spans if s.time_range.start <= e.time_range.start <= s.time_range.end]
                if inside:
                    s = min(inside, key=lambda s: s.time_range.end - s.time_range.start)
                    rng = (s.name, int(s.id))
            out.append(_event(e.name, e.time_range.start, e.time_range.end, rng, "cuda"))
    else:
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    return sorted(out, key=lambda ev: ev["start_ns"])


@contextlib.contextmanager
def _quiet_profiler() -> Iterator[None]:
    """Kineto writes its own log lines (``USDT: ... profiler_start``) to file descriptor 2, which
    a notebook shows as stderr (and nbgrader scores as a failure): silence its log, and the
    descriptor, while the profiler runs."""
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    saved = None
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        saved = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def record(fn: Callable[[], Any], *, device: str | None = None, warmup: int = 1, iterations: int = 1) -> Any:
    """Profile ``iterations`` calls of ``fn()`` with ``torch.profiler`` and return the finished
    profiler, following the lecture's hygiene: ``warmup`` calls first (first-call costs: library
    loading, allocation, autotuning), only the region of interest under the profiler, and a
    synchronisation so every kernel has finished before the profiler stops. Its
    ``key_averages().table()`` is torch's own summary; ``events_from_profile`` its kernel events."""
    from torch.profiler import ProfilerActivity, profile

    from .hardware import device as current_device

    dev = device or current_device()
    for _ in range(warmup):
        fn()
    _sync(dev)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if str(dev).startswith("cuda") else [])
    with _quiet_profiler():
        with profile(activities=activities) as prof:
            for _ in range(iterations):
                fn()
            _sync(dev)
    return prof


def profile_events(fn: Callable[[], Any], *, device: str | None = None, warmup: int = 1,
                   iterations: int = 1) -> list[dict[str, Any]]:
    """The kernel events (``events_from_profile``) of ``record(fn, ...)``: ``iterations`` calls of
    ``fn()`` under ``torch.profiler`` after ``warmup`` calls, synchronised."""
    from .hardware import device as current_device

    dev = device or current_device()
    prof = record(fn, device=dev, warmup=warmup, iterations=iterations)
    with _quiet_profiler():
        return events_from_profile(prof, "cuda" if str(dev).startswith("cuda") else "cpu")


def small_resnet(channels: int = 16, blocks: int = 2, classes: int = 10, *, in_channels: int = 3,
                 ranges: bool = True) -> Any:
    """A small ResNet in eval mode: a stem (conv, BN, ReLU), ``blocks`` residual blocks (conv, BN,
    ReLU, conv, BN, add, ReLU), average pooling and a linear head. With ``ranges`` each block runs
    in ``nvtx_range("layer<i>")`` and the stem and head in ranges of their own."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, name: str):
            super().__init__()
            self.name = name
            self.conv1, self.bn1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels)
            self.conv2, self.bn2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels)

        def forward(self, x):
            with nvtx_range(self.name) if ranges else contextlib.nullcontext():
                y = torch.relu(self.bn1(self.conv1(x)))
                return torch.relu(self.bn2(self.conv2(y)) + x)

    class Named(nn.Sequential):
        def __init__(self, name: str, *layers: nn.Module):
            super().__init__(*layers)
            self.name = name

        def forward(self, x):
            with nvtx_range(self.name) if ranges else contextlib.nullcontext():
                return super().forward(x)

    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(
        Named("stem", nn.Conv2d(in_channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU()),
        *[Block(f"layer{i + 1}") for i in range(blocks)],
        Named("head", nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, classes)))
    with torch.no_grad():                      # running statistics that are not the identity
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5, generator=g)
                m.running_var.uniform_(0.5, 2.0, generator=g)
    return model.eval()


# --- the lecture's ResNet-50 tables -------------------------------------------------------------

# gpukernsum, "csv output example for ResNet50. Top 5 kernels." As printed: time %, total (ns,
# three significant digits), instances, avg, med, min, max, stddev (ns), a short name, what it is.
LECTURE_GPUKERNSUM = (
    (22.0, 2.39e8, 5300, 45135.4, 40960, 10977, 153919, 39208,
     "cudnn::bn_fw_inf_1C11_kernel_NCHW<float, float, (bool)1, (int)1>", "batch norm (inference)"),
    (15.9, 1.72e8, 2300, 74873.1, 64383.5, 34528, 121599, 19662.9,
     "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>", "GEMM (CUTLASS, TF32 tensor cores)"),
    (12.6, 1.36e8, 4900, 27840.4, 10816, 5345, 128256, 32642.9,
     "at::native::vectorized_elementwise_kernel<4, launch_clamp_scalar>", "clamp (ReLU)"),
    (11.5, 1.24e8, 4800, 25914.9, 11904, 5408, 130528, 29270.2,
     "cudnn::ops::nchwToNhwcKernel<float, float, float, (bool)0, (bool)1>", "NCHW -> NHWC conversion"),
    (11.2, 1.21e8, 1600, 75810.0, 45216, 16736, 178304, 54248.0,
     "at::native::vectorized_elementwise_kernel<4, BinaryFunctor<AddFunctor<float>>>", "add (residual)"),
)

# nvtxkernsum for the range "layer1" (one instance of the range), totals printed in full.
LECTURE_NVTXKERNSUM = (
    (10, 817501, 81750.1, 41280, 39424, 144896, 52978.6, "cudnn::bn_fw_inf_1C11_kernel_NCHW", "batch norm"),
    (7, 573215, 81887.9, 88448, 34976, 93920, 20902.0, "cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4", "GEMM"),
    (3, 527775, 175925.0, 176032, 175520, 176223, 363.5, "vectorized_elementwise_kernel<AddFunctor<float>>", "add"),
    (9, 523325, 58147.2, 26336, 24928, 123296, 48642.6, "vectorized_elementwise_kernel<launch_clamp_scalar>",
     "clamp (ReLU)"),
    (3, 303231, 101077.0, 100864, 100767, 101600, 455.5,
     "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", "implicit-GEMM convolution"),
    (6, 107456, 17909.3, 17520, 5760, 31392, 13317.9, "cudnn::ops::nchwToNhwcKernel", "NCHW -> NHWC"),
)


def _half_unit(value: float, significant: int) -> float:
    """Half a unit in the last printed digit of ``value`` printed with ``significant`` digits."""
    return 0.5 * 10 ** (math.floor(math.log10(abs(value))) - significant + 1) if value else 0.0


def lecture_rows() -> list[dict[str, Any]]:
    """The lecture's gpukernsum rows, recomputed from what they print.

    For each row: total / instances against the printed average, with the interval the
    total's three printed digits allow (``avg_lo``..``avg_hi``); the GPU time the row's share
    implies (total / time %); instances per iteration (every count is a multiple of their
    greatest common divisor, the number of iterations profiled)."""
    iterations = math.gcd(*(r[2] for r in LECTURE_GPUKERNSUM))
    out = []
    for pct, total, n, avg, med, lo, hi, sd, name, what in LECTURE_GPUKERNSUM:
        half = _half_unit(total, 3)
        out.append({"what": what, "name": name, "time_pct": pct, "total_ns": total, "instances": n,
                    "avg_printed": avg, "avg_from_total": total / n, "avg_lo": (total - half) / n,
                    "avg_hi": (total + half) / n, "consistent": (total - half) / n <= avg <= (total + half) / n,
                    "total_from_avg": n * avg, "gpu_time_ns": total / (pct / 100), "per_iteration": n // iterations,
                    "iterations": iterations})
    return out


# --- Nsight Compute --------------------------------------------------------------------------------

NCU_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")


class NcuError(RuntimeError):
    """Nsight Compute is missing, or could not profile (the message says why)."""


def ncu_path() -> str | None:
    """The ``ncu`` executable: on PATH, or in the usual CUDA and Nsight Compute folders."""
    found = shutil.which("ncu")
    if found:
        return found
    import glob

    for pattern in ("/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu",
                    "/usr/local/NVIDIA-Nsight-Compute*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def ncu_command(target: Sequence[str], metrics: Sequence[str] = NCU_BYTES, *, ncu: str | None = None,
                kernel_regex: str | None = None) -> list[str]:
    """The lecture's ``ncu`` line, cut to what a table needs: the ``metrics`` of every kernel
    launched between ``cudaProfilerStart`` and ``cudaProfilerStop`` (``--profile-from-start
    off``), as CSV in base units, caches flushed before each kernel (ncu's default)."""
    cmd = [ncu or ncu_path() or "ncu", "--csv", "--print-units", "base", "--profile-from-start", "off",
           "--target-processes", "all", "--metrics", ",".join(metrics)]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    return cmd + list(target)


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """ncu's ``--csv`` output (one line per kernel and metric; lines of the profiled program and
    ncu's ``==PROF==`` messages are skipped) as rows {id, kernel, metric, unit, value}. Also reads
    ``--print-summary`` tables, which give ``Average`` instead of ``Metric Value``."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"') and '"Metric Name"' in ln), None)
    if start is None:
        return []
    reader = csv.DictReader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"'))))
    rows = []
    for rec in reader:
        raw = rec.get("Metric Value", rec.get("Average", ""))
        try:
            value = float(str(raw).replace(",", ""))
        except ValueError:
            continue
        rows.append({"id": rec.get("ID", ""), "kernel": rec.get("Kernel Name", ""), "metric": rec.get("Metric Name", ""),
                     "unit": rec.get("Metric Unit", ""), "value": value})
    return rows


def ncu_metrics(code: str, metrics: Sequence[str] = NCU_BYTES, *, timeout: float = 600.0,
                kernel_regex: str | None = None) -> list[dict[str, Any]]:
    """Run the Python snippet ``code`` under ``ncu`` and return ``parse_ncu_csv`` of what it
    printed. The snippet brackets the launches to measure with ``torch.cuda.profiler.start()``
    and ``stop()`` (after a warm-up, so compilation is not measured). Raises ``NcuError`` with
    ncu's reason when there is no ncu or it cannot read the counters (``ERR_NVGPUCTRPERM``: the
    driver lets only administrators profile; see NVIDIA's note on that error)."""
    refuse_under_a_guard("gpudl.profiling.ncu_metrics", sys._getframe(1))     # it runs code in another process
    exe = ncu_path()
    if exe is None:
        raise NcuError("ncu (Nsight Compute) is not installed on this machine")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    try:
        proc = subprocess.run(ncu_command([sys.executable, "-c", code], metrics, ncu=exe, kernel_regex=kernel_regex),
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise NcuError(f"ncu ran past {timeout:.0f} s") from None
    rows = parse_ncu_csv(proc.stdout)
    if not rows:
        text = (proc.stdout + proc.stderr).strip().splitlines()
        reason = next((ln for ln in text if "ERR_" in ln or "rror" in ln), text[-1] if text else "no output")
        raise NcuError(f"ncu measured nothing (exit {proc.returncode}): {reason.strip()}")
    return rows
