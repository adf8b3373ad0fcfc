"""Checks for lab04_cuda_programming_model.

Each check takes the student's function and ``hidden=False`` (the examples of the released
notebook) or ``hidden=True`` (cases from the instructor's secret seed). Model exercises
(launch shape, global index, occupancy, waves, sectors, banks) are compared with
``gpudl.cuda_model``'s references, which the student's code may not call.

Kernel exercises run the student's host function in the student's process, through the
``@student_side`` adapter ``run_kernels``: it builds nothing itself (the arrays arrive as
plain data), calls the student's function under ``gpudl.cuda_model.checker.checking()``,
which runs every kernel launch thread by thread (on a GPU the compiled kernel then runs for
real, and on the first example under compute-sanitizer's memcheck and racecheck where the
machine has the tool; ``GPUDL_SANITIZE=0`` skips them), and returns the
result with the checker's report as plain data. The check then judges here: the checker's
findings first (out-of-bounds, races, barriers, endless loops, absurd grids), then the grid
against ``(n + M - 1) // M``, the global accesses per thread against the exercise's budget,
and the result against NumPy. Every kernel is checked on sizes that are not multiples of the
block and on grids of several blocks.
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable

import numpy as np

from ..cuda_model import launch as _launch, memory as _memory
from ..cuda_model.occupancy import LIMITS as _LIMITS, occupancy as _occupancy_model, waves as _waves_model
from ..hardware import device, sm_limits
from . import (Case, GradingError, assert_close, assert_equal, call_student, check_cases, check_choice, rng,
               run_student, student_side)
from .boundary import exercise

LAB = "lab04"


# --- the student side: run the student's host function with every launch checked -----------

def _plain(value: Any) -> Any:
    """A launcher's result as plain data: device and simulator arrays to NumPy."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(getattr(value, "_ary", None), np.ndarray):
        return np.array(value._ary)
    if hasattr(value, "copy_to_host"):
        return value.copy_to_host()
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    return np.asarray(value)


@student_side
def run_kernels(fn: Callable, *args: Any, limits: Any = None, check: bool = True, sanitize: bool = False) -> dict:
    """``fn(*args)`` with every kernel launch checked; returns {"result", "report", "sanitizer"}."""
    from ..cuda_model.checker import checking

    with checking(limits, check=check, keep=sanitize) as report:
        result = fn(*args)
    out = {"result": _plain(result), "report": report.as_dict(), "sanitizer": []}
    if sanitize and report.kept and device() == "cuda":
        from ..cuda_model.device import sanitize as run_sanitizer

        kernel, grid, block, host_args = report.kept[0]
        out["sanitizer"] = [{"tool": r.tool, "errors": r.errors, "excerpt": r.excerpt, "ran": r.ran}
                            for r in run_sanitizer(kernel, grid, block, host_args)]
    return out


# --- judging a checked run ---------------------------------------------------------------------

def _run(fn: Any, args: tuple, what: str, *, sanitize: bool = False, check: bool = True) -> dict:
    from ..cuda_model.checker import CheckLimits

    data = run_student(run_kernels, fn, *args, limits=CheckLimits(), check=check, sanitize=sanitize,
                       label="this kernel", what=what)
    launches = data["report"]["launches"]
    if not launches:
        raise GradingError(f"{what} launched no kernel: launch yours as kernel[blocks, threads_per_block](...)")
    for launch in launches:
        if launch["findings"]:
            raise GradingError(f"{what}: {launch['findings'][0]['message']}")
    for result in data["sanitizer"]:
        if result["ran"] and result["errors"]:
            raise GradingError(f"{what}: compute-sanitizer's {result['tool']} found {result['errors']} error(s) in "
                               f"the compiled kernel on the GPU:\n{result['excerpt']}")
    return data


def _budget(data: dict, what: str, *, reads: int | None = None, writes: int | None = None, why: str = "") -> None:
    for launch in data["report"]["launches"]:
        if not launch["checked"]:
            continue
        if reads is not None and launch["max_reads_per_thread"] > reads:
            raise GradingError(f"{what}: {launch['busiest_reader']} read global memory "
                               f"{launch['max_reads_per_thread']} times; this exercise allows {reads} per thread{why}")
        if writes is not None and launch["max_writes_per_thread"] > writes:
            raise GradingError(f"{what}: {launch['busiest_writer']} wrote global memory "
                               f"{launch['max_writes_per_thread']} times; one write per output element is enough")


def _grid_1d(data: dict, n: int, what: str) -> None:
    launch = data["report"]["launches"][0]
    blocks, threads = launch["grid"][0], launch["block"][0]
    need = -(-n // threads)
    if blocks * threads < n:
        raise GradingError(f"{what}: you launched {blocks} block(s) of {threads} threads = {blocks * threads} threads "
                           f"for n = {n}: the last {n - blocks * threads} element(s) get no thread. Launch "
                           f"(n + M - 1) // M = {need} blocks (n // M drops the tail)")
    if blocks > need:
        raise GradingError(f"{what}: you launched {blocks} blocks of {threads} threads for n = {n}; "
                           f"(n + M - 1) // M = {need} cover every element, the rest only idle")


def _result(data: dict, what: str) -> Any:
    value = data["result"]
    if value is None:
        raise GradingError(f"{what} returned None: did you forget to `return out`?")
    return value


def _f32(g: np.random.Generator, *shape: int) -> np.ndarray:
    return (g.standard_normal(shape)).astype(np.float32)


def _gpu() -> bool:
    return device() == "cuda"


def _sanitize(hidden: bool, case: int) -> bool:
    """compute-sanitizer on a GPU, for the first visible case (``GPUDL_SANITIZE=0`` turns it off)."""
    return _gpu() and not hidden and case == 0 and os.environ.get("GPUDL_SANITIZE", "1") != "0"


# --- 1. launch shape -----------------------------------------------------------------------------

def _launch_shape_ref(n: int, m: int) -> tuple[int, int]:
    return (_launch.grid_size(n, m), _launch.idle_threads(n, m))


@exercise
def launch_shape(fn: Callable, hidden: bool = False) -> None:
    """``fn(n, threads_per_block)`` -> (blocks, idle threads)."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((50_000, 256), label="the lecture's vectorAdd: 50,000 elements, 256 threads per block"),
                 Case((257, 128), label="n = 257, 128 threads per block"),
                 Case((1024, 256), label="n = 1024, a multiple of 256")]
    else:
        g = rng(f"{LAB}.launch_shape")
        cases = [Case((int(g.integers(1, 10**6)), int(g.choice([32, 64, 96, 128, 256, 512, 1024])))) for _ in range(8)]
        cases += [Case((1, 1024), label="n = 1"), Case((0, 128), label="n = 0: no blocks at all")]
    check_cases(fn, _launch_shape_ref, cases, forbid=[_launch.grid_size, _launch.idle_threads],
                label="the launch shape", compare=_compare_launch)


def _compare_launch(actual: Any, expected: tuple[int, int]) -> None:
    if not isinstance(actual, (tuple, list)) or len(actual) != 2:
        raise GradingError(f"return a pair (blocks, idle_threads), got {actual!r}")
    blocks, idle = actual
    if blocks != expected[0]:
        hint = ": n // M drops the tail, (n + M - 1) // M rounds up" if blocks == expected[0] - 1 else ""
        raise GradingError(f"blocks = {blocks!r}, expected {expected[0]}{hint}")
    if idle != expected[1]:
        raise GradingError(f"idle threads = {idle!r}, expected {expected[1]}: blocks x M - n")


# --- 2. global index -------------------------------------------------------------------------------

@exercise
def global_index(fn: Callable, hidden: bool = False) -> None:
    """``fn(block_idx, block_dim, thread_idx)`` -> the thread's global (x, y, z)."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case(((2, 0, 0), (8, 1, 1), (5, 0, 0)), label="the lecture's thread 5 of block 2, 8 threads per block"),
                 Case(((1, 1, 0), (4, 3, 1), (3, 2, 0)), label="block (1, 1) of the lecture's 3 x 2 grid of 4 x 3 blocks"),
                 Case(((0, 0, 0), (32, 1, 1), (7, 0, 0)), label="block 0: the global index is threadIdx")]
    else:
        g = rng(f"{LAB}.global_index")
        cases = []
        for _ in range(10):
            bdim = tuple(int(v) for v in (g.integers(1, 33), g.integers(1, 9), g.integers(1, 5)))
            cases.append(Case((tuple(int(g.integers(0, 50)) for _ in range(3)), bdim,
                               tuple(int(g.integers(0, d)) for d in bdim))))
    check_cases(fn, _launch.global_index, cases, forbid=[_launch.global_index], label="the global index",
                compare=_compare_index)
    if not hidden:
        seen = set()
        for by in range(2):
            for bx in range(3):
                for ty in range(3):
                    for tx in range(4):
                        seen.add(tuple(call_student(fn, (bx, by, 0), (4, 3, 1), (tx, ty, 0),
                                                    forbid=[_launch.global_index], label="the global index")))
        if len(seen) != 72:
            raise GradingError(f"the lecture's 3 x 2 blocks of 4 x 3 threads are 72 threads, but your indices take only "
                               f"{len(seen)} distinct values: two threads would share an element")


def _compare_index(actual: Any, expected: tuple) -> None:
    if not isinstance(actual, (tuple, list)) or len(actual) != 3:
        raise GradingError(f"return the global index as a tuple (x, y, z), got {actual!r}")
    if tuple(actual) != tuple(expected):
        raise GradingError(f"got {tuple(actual)}, expected {tuple(expected)}: per dimension, "
                           "blockIdx * blockDim + threadIdx")


# --- 3. SAXPY --------------------------------------------------------------------------------------

def _saxpy_cases(hidden: bool) -> list[tuple[float, np.ndarray, np.ndarray, int]]:
    g = rng(f"{LAB}.saxpy") if hidden else np.random.default_rng(4)
    if not hidden:
        return [(2.0, _f32(g, 257), _f32(g, 257), 128), (0.5, _f32(g, 1000), _f32(g, 1000), 256)]
    out = []
    for m in (64, 96, 128):
        n = int(g.integers(2 * m + 1, 12 * m))
        n += n % m == 0
        out.append((float(g.normal()), _f32(g, n), _f32(g, n), m))
    return out


@exercise
def saxpy(fn: Callable, hidden: bool = False) -> None:
    """``fn(a, x, y, threads_per_block)`` -> a * x + y, launched with (n + M - 1) // M blocks."""
    __tracebackhide__ = True
    for i, (a, x, y, m) in enumerate(_saxpy_cases(hidden)):
        n = len(x)
        what = f"saxpy(a={a:.3g}, n={n}, threads_per_block={m})"
        data = _run(fn, (a, x, y, m), what, sanitize=_sanitize(hidden, i))
        _grid_1d(data, n, what)
        _budget(data, what, reads=2, writes=1, why=": x[i] and y[i]")
        assert_close(_result(data, what), a * x.astype(np.float64) + y, dtype="fp32", k=2, name=f"result of {what}")
    if _gpu() and hidden:
        g = rng(f"{LAB}.saxpy.large")
        n = int(g.integers(1 << 20, 1 << 21))
        x, y = _f32(g, n), _f32(g, n)
        data = _run(fn, (1.5, x, y, 256), f"saxpy(n={n}) on the GPU", check=False)
        assert_close(_result(data, "saxpy"), 1.5 * x.astype(np.float64) + y, dtype="fp32", k=2, name="result")


# --- 4. a 2-D grid over a matrix ------------------------------------------------------------------

def _bias_cases(hidden: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    g = rng(f"{LAB}.add_bias") if hidden else np.random.default_rng(5)
    shapes = [(20, 37), (33, 18)] if not hidden else [(int(g.integers(17, 40)), int(g.integers(17, 50))) for _ in range(2)]
    return [(_f32(g, r, c), _f32(g, c)) for r, c in shapes]


@exercise
def add_bias(fn: Callable, hidden: bool = False) -> None:
    """``fn(A, b)`` -> A + b (b added to each row), a 2-D grid with x over columns."""
    __tracebackhide__ = True
    for i, (A, b) in enumerate(_bias_cases(hidden)):
        rows, cols = A.shape
        what = f"add_bias on a {rows} x {cols} matrix"
        data = _run(fn, (A, b), what, sanitize=_sanitize(hidden, i))
        launch = data["report"]["launches"][0]
        (gx, gy, _), (bx, by, _) = launch["grid"], launch["block"]
        if gx * bx < cols or gy * by < rows:
            swapped = gx * bx >= rows and gy * by >= cols
            raise GradingError(f"{what}: the grid covers {gy * by} rows x {gx * bx} columns of threads, the matrix has "
                               f"{rows} x {cols}" + (": rows and columns swapped? x runs along a row (columns), "
                                                     "y down the matrix (rows)" if swapped else ""))
        _coalesced(launch, cols, A.itemsize, what)
        _budget(data, what, reads=2, writes=1)
        assert_close(_result(data, what), A.astype(np.float64) + b, dtype="fp32", k=1, name=f"result of {what}")


def _coalesced(launch: dict, cols: int, itemsize: int, what: str) -> None:
    """Consecutive threads (threadIdx.x) of warp 0 must write consecutive elements of a row."""
    written = [v for v in launch["warp0"].values() if v["w"][0] >= 0 and v["w"][1] >= 0]
    if launch["block"][0] < 2 or not written:
        return
    step = written[0]["w"][1] - written[0]["w"][0]
    if step == cols * itemsize:
        raise GradingError(f"{what}: right values, but threads 0 and 1 of a warp (threadIdx.x = 0, 1) write elements "
                           f"one row apart: a warp touches "
                           f"{_memory.strided_sectors(cols, itemsize)} sectors of 32 bytes instead of "
                           f"{_memory.strided_sectors(1, itemsize)}. Map x to columns, y to rows")


# --- 5. the radius-3 stencil ----------------------------------------------------------------------

RADIUS = 3


def _stencil_ref(x: np.ndarray) -> np.ndarray:
    return np.convolve(x.astype(np.float64), np.ones(2 * RADIUS + 1), mode="same")


@exercise
def stencil(fn: Callable, hidden: bool = False) -> None:
    """``fn(x)`` -> out[i] = x[i-3] + ... + x[i+3] (zeros beyond the ends), with shared memory."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.stencil") if hidden else np.random.default_rng(6)
    sizes = [200, 67] if not hidden else [int(g.integers(130, 400)), int(g.integers(4, 60))]
    for i, n in enumerate(sizes):
        x = _f32(g, n)
        what = f"stencil on n = {n}"
        data = _run(fn, (x,), what, sanitize=_sanitize(hidden, i))
        _grid_1d(data, n, what)
        _budget(data, what, reads=3, writes=1,
                why=(": a thread loads its own element and at most two of the halo into shared memory, then reads "
                     "its 7 inputs from there"))
        launch = data["report"]["launches"][0]
        if launch["intervals"] < 2:
            raise GradingError(f"{what}: right values, but the kernel never waits at cuda.syncthreads(): threads read "
                               "what other threads put in shared memory, so they must wait until it is there")
        assert_close(_result(data, what), _stencil_ref(x), dtype="fp32", k=7, name=f"result of {what}")


# --- 6. tiled matrix product --------------------------------------------------------------------------

TILE = 16


@exercise
def matmul(fn: Callable, hidden: bool = False) -> None:
    """``fn(A, B)`` -> A @ B from TILE x TILE shared-memory tiles."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.matmul") if hidden else np.random.default_rng(7)
    shapes = [(20, 27, 18)] if not hidden else [(int(g.integers(17, 30)), int(g.integers(17, 32)),
                                                 int(g.integers(17, 30)))]
    for i, (m, k, n) in enumerate(shapes):
        A, B = _f32(g, m, k), _f32(g, k, n)
        what = f"matmul of ({m} x {k}) @ ({k} x {n})"
        data = _run(fn, (A, B), what, sanitize=_sanitize(hidden, i))
        tiles = -(-k // TILE)
        _budget(data, what, reads=2 * tiles, writes=1,
                why=f": with {tiles} tiles along k a thread loads one element of A and one of B per tile "
                    f"({2 * tiles}); reading its whole row and column from global memory takes {2 * k}")
        launch = data["report"]["launches"][0]
        (gx, gy, _), (bx, by, _) = launch["grid"], launch["block"]
        if gx * bx < n or gy * by < m:
            raise GradingError(f"{what}: the grid covers {gy * by} rows x {gx * bx} columns of C, which has {m} x {n}")
        assert_close(_result(data, what), A.astype(np.float64) @ B, dtype="fp32", k=k, name=f"result of {what}")


# --- 7. sum of an array ----------------------------------------------------------------------------

@exercise
def array_sum(fn: Callable, hidden: bool = False) -> None:
    """``fn(x)`` -> sum(x): a shared-memory tree per block, then one atomic (or a second pass) per block."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.array_sum") if hidden else np.random.default_rng(8)
    sizes = [1000, 77] if not hidden else [int(g.integers(300, 1500)), int(g.integers(2, 120))]
    for i, n in enumerate(sizes):
        x = _f32(g, n)
        what = f"array_sum on n = {n}"
        data = _run(fn, (x,), what, sanitize=_sanitize(hidden, i))
        for launch in data["report"]["launches"]:
            blocks = math.prod(launch["grid"])
            atomics = sum(launch["atomics"].values())
            if atomics > blocks:
                raise GradingError(f"{what}: {atomics} atomic additions from {blocks} block(s): every thread adds "
                                   "into one word, so the additions queue up one after another. Sum each block in "
                                   "shared memory first (a tree), then one atomic per block")
        value = _result(data, what)
        if isinstance(value, (list, tuple, np.ndarray)) and np.size(value) == 1:
            value = float(np.asarray(value).reshape(-1)[0])
        if not isinstance(value, (int, float)):
            raise GradingError(f"{what} returned {type(value).__name__}: return the sum as a number")
        assert_close(value, float(x.astype(np.float64).sum()), dtype="fp32", k=n, name=f"sum from {what}")


# --- 8. occupancy --------------------------------------------------------------------------------

_OCC_VISIBLE = [("V100", 128, 17, 20), ("A100", 256, 32, 40_000), ("H100-SXM", 100, 40, 10_000)]


def _occupancy_ref(limits: Any, threads: int, registers: int, shared: int) -> tuple[int, str, dict]:
    occ = _occupancy_model(limits, threads, registers, shared)
    return occ.blocks_per_sm, occ.limiter, {k: int(v) for k, v in occ.limits.items()}


def _occupancy_cases(hidden: bool) -> list[Case]:
    if not hidden:
        labels = ["the lecture's Nsight Compute table (80-SM Volta)", "an A100 kernel",
                  "an H100 kernel whose last warp is partial"]
        return [Case((sm_limits(name), t, r, s), label=f"{lab}: {t} threads, {r} registers, {s} bytes of shared memory")
                for (name, t, r, s), lab in zip(_OCC_VISIBLE, labels)]
    g = rng(f"{LAB}.occupancy")
    cases = []
    while len(cases) < 8:
        name = str(g.choice(["V100", "T4", "A100", "RTX3090", "H100-SXM"]))
        lim = sm_limits(name)
        t = int(g.integers(1, lim.max_threads_per_block + 1))
        r = int(g.integers(8, 129))
        s = int(g.integers(1, 24 * 1024))
        occ = _occupancy_model(lim, t, r, s)
        if occ.blocks_per_sm == 0 or len(occ.limiters) > 1:
            continue                       # a launch that cannot run, or a tie: not this exercise
        cases.append(Case((lim, t, r, s), label=f"{name}: {t} threads, {r} registers, {s} bytes of shared memory"))
    return cases


@exercise
def occupancy(fn: Callable, hidden: bool = False) -> None:
    """``fn(limits, threads_per_block, registers_per_thread, shared_bytes)`` -> (blocks, limiter, limits)."""
    __tracebackhide__ = True
    check_cases(fn, _occupancy_ref, _occupancy_cases(hidden), forbid=[_occupancy_model], label="occupancy",
                compare=_compare_occupancy)


def _compare_occupancy(actual: Any, expected: tuple[int, str, dict]) -> None:
    if not isinstance(actual, (tuple, list)) or len(actual) != 3 or not isinstance(actual[2], dict):
        raise GradingError(f"return (blocks_per_sm, limiter, limits) with limits a dict, got {actual!r}")
    blocks, limiter, limits = actual
    want_blocks, want_limiter, want = expected
    for name in _LIMITS:
        if name not in limits:
            raise GradingError(f"limits has no {name!r} entry: give all four, {list(_LIMITS)}")
        got = limits[name]
        if got != want[name]:
            hint = {"registers": ": registers go to a warp in units of 256 (17 x 32 = 544 -> 768), from one of 4 "
                                 "sub-partitions of the register file",
                    "warps": ": a block of T threads takes ceil(T / 32) warps",
                    "shared memory": ": round each block's bytes (plus the reserved bytes) up to the allocation "
                                     "granularity, and divide the SM's shared memory",
                    "blocks": ": the SM's block slots, max_blocks_per_sm"}[name]
            raise GradingError(f"the {name} limit is {got!r}, expected {want[name]}{hint}")
    if blocks != want_blocks:
        raise GradingError(f"blocks per SM = {blocks!r}, expected {want_blocks}: the smallest of the four limits")
    assert_equal(limiter, want_limiter, name="limiter", hint="the resource whose limit is the smallest")


# --- 9. waves ----------------------------------------------------------------------------------------

def _waves_ref(grid: int, blocks_per_sm: int, sms: int) -> tuple[float, float]:
    w = _waves_model(grid, blocks_per_sm, sms)
    return (w.waves, w.efficiency)


@exercise
def waves(fn: Callable, hidden: bool = False) -> None:
    """``fn(grid, blocks_per_sm, sms)`` -> (waves, efficiency)."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((4132, 16, 80), label="the lecture's 4,132 blocks, 16 per SM, 80 SMs"),
                 Case((12, 1, 8), label="the lecture's 12 blocks on 8 SMs, one block per SM"),
                 Case((1056, 8, 132), label="exactly one wave on an H100")]
    else:
        g = rng(f"{LAB}.waves")
        cases = [Case((int(g.integers(1, 20_000)), int(g.integers(1, 33)), int(g.choice([56, 80, 108, 114, 132]))))
                 for _ in range(8)]
    check_cases(fn, _waves_ref, cases, forbid=[_waves_model], label="waves", compare=_compare_pair,
                names=("waves", "efficiency"),
                hints={"waves": "a wave is blocks_per_sm x sms blocks, not sms blocks",
                       "efficiency": "grid / (number of waves, rounded up, x blocks per wave)"})


def _compare_pair(actual: Any, expected: tuple, names: tuple[str, str], hints: dict) -> None:
    if not isinstance(actual, (tuple, list)) or len(actual) != 2:
        raise GradingError(f"return a pair ({names[0]}, {names[1]}), got {actual!r}")
    for got, want, name in zip(actual, expected, names):
        try:
            assert_close(got, want, rtol=1e-9, atol=0.0, name=name)
        except GradingError as exc:
            raise GradingError(f"{exc}: {hints[name]}") from None


# --- 10. sectors -------------------------------------------------------------------------------------

def _warp(stride: int, itemsize: int, offset: int = 0) -> list[int]:
    return _memory.strided_addresses(stride, itemsize, offset=offset)


@exercise
def sectors(fn: Callable, hidden: bool = False) -> None:
    """``fn(addresses, access_bytes)`` -> distinct 32-byte sectors a warp's accesses touch."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((_warp(1, 4), 4), label="32 consecutive FP32 values (stride 1)"),
                 Case((_warp(2, 4), 4), label="FP32 with stride 2"),
                 Case((_warp(32, 4), 4), label="FP32 with stride 32"),
                 Case(([5], 1), label="one thread reading one byte: the lecture's 32 B fetched to use 1 B"),
                 Case((_warp(1, 4, offset=4), 4), label="stride 1 starting one element past a sector boundary")]
    else:
        g = rng(f"{LAB}.sectors")
        cases = [Case((_warp(int(g.integers(1, 40)), int(b), int(g.integers(0, 64))), int(b)))
                 for b in g.choice([1, 2, 4, 8], size=6)]
        cases.append(Case(([int(v) for v in g.integers(0, 1 << 16, size=32)], 4), label="32 scattered addresses"))
    check_cases(fn, _memory.sectors, cases, forbid=[_memory.sectors, _memory.strided_sectors], label="sectors",
                compare=_compare_count, what="sectors",
                hint="count the distinct 32-byte blocks (address // 32) touched, not the elements")


def _compare_count(actual: Any, expected: int, what: str, hint: str) -> None:
    if isinstance(actual, bool) or not isinstance(actual, (int, np.integer)):
        raise GradingError(f"return the number of {what} as an int, got {actual!r}")
    if int(actual) != expected:
        got, want = (f"a {int(actual)}{what}", f"{expected}") if what.startswith("-") else \
            (f"{int(actual)} {what}", f"{expected}")
        raise GradingError(f"{got}, expected {want}: {hint}")


# --- 11. bank conflicts --------------------------------------------------------------------------

@exercise
def bank_conflicts(fn: Callable, hidden: bool = False) -> None:
    """``fn(word_indices)`` -> the degree of conflict of a warp's shared-memory access."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((list(range(32)),), label="32 consecutive words"),
                 Case(([2 * t for t in range(32)],), label="stride 2"),
                 Case((_memory.column_indices(32),), label="a column of a 32 x 32 tile"),
                 Case((_memory.column_indices(33),), label="a column of the tile padded to 33 words per row"),
                 Case(([7] * 32,), label="every thread reads the same word (a broadcast)")]
    else:
        g = rng(f"{LAB}.bank_conflicts")
        cases = [Case(([int(v) * int(s) for v in range(32)],)) for s in g.integers(1, 70, size=5)]
        cases += [Case(([int(v) for v in g.integers(0, 256, size=32)],), label="32 random words")]
    check_cases(fn, _memory.bank_conflicts, cases, forbid=[_memory.bank_conflicts], label="bank conflicts",
                compare=_compare_count, what="-way conflict",
                hint="the most *different* words in one bank (word % 32); threads reading one word share it")


# --- 12. questions -----------------------------------------------------------------------------------

_LIMITER_ANSWER = "affb7d9d3f857c5beeb58e08d7dffe1e"
_STRIDE_ANSWER = "3346c76e3764bbeb303b43e15a7e118e"


@exercise
def limiter_question(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _LIMITER_ANSWER, "compute each limit: 8 warps per block; 64 registers x 32 "
                 "= 2,048 per warp; 4,096 + 1,024 bytes of shared memory per block on an A100", question="limiter")


@exercise
def stride_question(answer: Any) -> None:
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCD", _STRIDE_ANSWER, "how many 32-byte sectors does one warp's load touch at "
                 "stride 32, and how many of their bytes does it use?", question="stride")


__all__ = ["run_kernels", "launch_shape", "global_index", "saxpy", "add_bias", "stencil", "matmul", "array_sum",
           "occupancy", "waves", "sectors", "bank_conflicts", "limiter_question", "stride_question"]
