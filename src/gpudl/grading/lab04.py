"""Checks for lab04_cuda_programming_model: the visible cases, the examples of the released notebook.

``check.NAME(fn)`` runs them; ``check.NAME(fn, hidden=True)`` runs the instructor's hidden cases
(other sizes, drawn from the grader's secret) when the notebook is graded. Each check is its
cases and a comparison (``_compare_NAME``) that the hidden cases reuse, so they teach alike.

Where the expected values come from:

- model exercises (launch shape, global index, occupancy, waves, sectors, banks): the values
  the instructor's references gave for exactly these cases when the lab was released
  (``gpudl.grading.expected``: ``expected("lab04")``); the course edition holds no code that
  computes them;
- kernel exercises: NumPy (``a * x + y``, ``A + b``, ``np.convolve``, ``A @ B``, ``x.sum()``), and
  the kernel checker for how the kernel got there.

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
from typing import Any, Callable, Sequence

import numpy as np

from ..cuda_model import memory as _memory
from ..cuda_model.occupancy import LIMITS as _LIMITS
from ..hardware import device, sm_limits
from . import (Case, GradingError, assert_close, assert_equal, call_student, check_cases, choice_letters,
               run_student, student_side)
from .boundary import exercise, question
from .expected import expected

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


def _sanitize(first_visible: bool) -> bool:
    """compute-sanitizer on a GPU, for the first visible case (``GPUDL_SANITIZE=0`` turns it off)."""
    return _gpu() and first_visible and os.environ.get("GPUDL_SANITIZE", "1") != "0"




# --- 1. launch shape -----------------------------------------------------------------------------

@exercise
def launch_shape(fn: Callable) -> None:
    """``fn(n, threads_per_block)`` -> (blocks, idle threads)."""
    __tracebackhide__ = True
    cases = [Case((50_000, 256), label="the lecture's vectorAdd: 50,000 elements, 256 threads per block"),
             Case((257, 128), label="n = 257, 128 threads per block"),
             Case((1024, 256), label="n = 1024, a multiple of 256")]
    _compare_launch_shape(fn, cases, expected(LAB))


def _compare_launch_shape(fn: Any, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.launch_shape, cases, label="the launch shape", compare=_compare_launch)


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
def global_index(fn: Callable) -> None:
    """``fn(block_idx, block_dim, thread_idx)`` -> the thread's global (x, y, z)."""
    __tracebackhide__ = True
    cases = [Case(((2, 0, 0), (8, 1, 1), (5, 0, 0)), label="the lecture's thread 5 of block 2, 8 threads per block"),
             Case(((1, 1, 0), (4, 3, 1), (3, 2, 0)), label="block (1, 1) of the lecture's 3 x 2 grid of 4 x 3 blocks"),
             Case(((0, 0, 0), (32, 1, 1), (7, 0, 0)), label="block 0: the global index is threadIdx")]
    _compare_global_index(fn, cases, expected(LAB))
    seen = set()
    for by in range(2):
        for bx in range(3):
            for ty in range(3):
                for tx in range(4):
                    seen.add(tuple(call_student(fn, (bx, by, 0), (4, 3, 1), (tx, ty, 0), label="the global index")))
    if len(seen) != 72:
        raise GradingError(f"the lecture's 3 x 2 blocks of 4 x 3 threads are 72 threads, but your indices take only "
                           f"{len(seen)} distinct values: two threads would share an element")


def _compare_global_index(fn: Any, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.global_index, cases, label="the global index", compare=_compare_index)


def _compare_index(actual: Any, expected: tuple) -> None:
    if not isinstance(actual, (tuple, list)) or len(actual) != 3:
        raise GradingError(f"return the global index as a tuple (x, y, z), got {actual!r}")
    if tuple(actual) != tuple(expected):
        raise GradingError(f"got {tuple(actual)}, expected {tuple(expected)}: per dimension, "
                           "blockIdx * blockDim + threadIdx")


# --- 3. SAXPY --------------------------------------------------------------------------------------

@exercise
def saxpy(fn: Callable) -> None:
    """``fn(a, x, y, threads_per_block)`` -> a * x + y, launched with (n + M - 1) // M blocks."""
    __tracebackhide__ = True
    g = np.random.default_rng(4)
    cases = [(2.0, _f32(g, 257), _f32(g, 257), 128), (0.5, _f32(g, 1000), _f32(g, 1000), 256)]
    _compare_saxpy(fn, cases, visible=True)


def _compare_saxpy(fn: Any, cases: Sequence[tuple], ref: Any = None, *, visible: bool = False) -> None:
    """Each case (a, x, y, threads_per_block) against NumPy's a * x + y."""
    __tracebackhide__ = True
    for i, (a, x, y, m) in enumerate(cases):
        n = len(x)
        what = f"saxpy(a={a:.3g}, n={n}, threads_per_block={m})"
        data = _run(fn, (a, x, y, m), what, sanitize=_sanitize(visible and i == 0))
        _grid_1d(data, n, what)
        _budget(data, what, reads=2, writes=1, why=": x[i] and y[i]")
        assert_close(_result(data, what), a * x.astype(np.float64) + y, dtype="fp32", k=2, name=f"result of {what}")


def _compare_saxpy_unchecked(fn: Any, a: float, x: np.ndarray, y: np.ndarray, m: int) -> None:
    """A large case on a GPU, run for real without the checker (too many threads to check)."""
    __tracebackhide__ = True
    data = _run(fn, (a, x, y, m), f"saxpy(n={len(x)}) on the GPU", check=False)
    assert_close(_result(data, "saxpy"), a * x.astype(np.float64) + y, dtype="fp32", k=2, name="result")


# --- 4. a 2-D grid over a matrix ------------------------------------------------------------------

@exercise
def add_bias(fn: Callable) -> None:
    """``fn(A, b)`` -> A + b (b added to each row), a 2-D grid with x over columns."""
    __tracebackhide__ = True
    g = np.random.default_rng(5)
    _compare_add_bias(fn, [(_f32(g, r, c), _f32(g, c)) for r, c in [(20, 37), (33, 18)]], visible=True)


def _compare_add_bias(fn: Any, cases: Sequence[tuple], ref: Any = None, *, visible: bool = False) -> None:
    """Each case (A, b) against NumPy's A + b; the grid must cover A with x over its columns."""
    __tracebackhide__ = True
    for i, (A, b) in enumerate(cases):
        rows, cols = A.shape
        what = f"add_bias on a {rows} x {cols} matrix"
        data = _run(fn, (A, b), what, sanitize=_sanitize(visible and i == 0))
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
        row_bytes, warp_bytes = cols * itemsize, _memory.WARP_SIZE * itemsize
        spread = (f"{row_bytes} bytes apart, each in a {_memory.SECTOR_BYTES}-byte sector of its own"
                  if row_bytes >= _memory.SECTOR_BYTES else f"{row_bytes} bytes apart")
        raise GradingError(f"{what}: right values, but threads 0 and 1 of a warp (threadIdx.x = 0, 1) write elements "
                           f"one row apart: a warp's 32 accesses lie {spread}, where along a row its "
                           f"{warp_bytes} bytes fill {warp_bytes // _memory.SECTOR_BYTES} sectors. Map x to columns, "
                           "y to rows")


# --- 5. the radius-3 stencil ----------------------------------------------------------------------

RADIUS = 3


def _convolved(x: np.ndarray) -> np.ndarray:
    """NumPy's answer: the sum of the 2 * RADIUS + 1 inputs around each element, zeros beyond the ends,
    one value per input. (``mode="same"`` would return max(n, 7) values: 7 for an n below 7.)"""
    full = np.convolve(x.astype(np.float64), np.ones(2 * RADIUS + 1), mode="full")
    return full[RADIUS:RADIUS + len(x)]


@exercise
def stencil(fn: Callable) -> None:
    """``fn(x)`` -> out[i] = x[i-3] + ... + x[i+3] (zeros beyond the ends), with shared memory."""
    __tracebackhide__ = True
    g = np.random.default_rng(6)
    _compare_stencil(fn, [_f32(g, n) for n in (200, 67)], visible=True)


def _compare_stencil(fn: Any, cases: Sequence[np.ndarray], ref: Any = None, *, visible: bool = False) -> None:
    """Each case x against np.convolve; at most 3 global reads per thread, and a barrier."""
    __tracebackhide__ = True
    for i, x in enumerate(cases):
        n = len(x)
        what = f"stencil on n = {n}"
        data = _run(fn, (x,), what, sanitize=_sanitize(visible and i == 0))
        _grid_1d(data, n, what)
        _budget(data, what, reads=3, writes=1,
                why=(": a thread loads its own element and at most two of the halo into shared memory, then reads "
                     "its 7 inputs from there"))
        launch = data["report"]["launches"][0]
        if launch["intervals"] < 2:
            raise GradingError(f"{what}: right values, but the kernel never waits at cuda.syncthreads(): threads read "
                               "what other threads put in shared memory, so they must wait until it is there")
        assert_close(_result(data, what), _convolved(x), dtype="fp32", k=7, name=f"result of {what}")


# --- 6. tiled matrix product --------------------------------------------------------------------------

TILE = 16


@exercise
def matmul(fn: Callable) -> None:
    """``fn(A, B)`` -> A @ B from TILE x TILE shared-memory tiles."""
    __tracebackhide__ = True
    g = np.random.default_rng(7)
    _compare_matmul(fn, [(_f32(g, m, k), _f32(g, k, n)) for m, k, n in [(20, 27, 18)]], visible=True)


def _compare_matmul(fn: Any, cases: Sequence[tuple], ref: Any = None, *, visible: bool = False) -> None:
    """Each case (A, B) against NumPy's A @ B; 2 ceil(k / TILE) global reads per thread at most."""
    __tracebackhide__ = True
    for i, (A, B) in enumerate(cases):
        (m, k), n = A.shape, B.shape[1]
        what = f"matmul of ({m} x {k}) @ ({k} x {n})"
        data = _run(fn, (A, B), what, sanitize=_sanitize(visible and i == 0))
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
def array_sum(fn: Callable) -> None:
    """``fn(x)`` -> sum(x): a shared-memory tree per block, then one atomic (or a second pass) per block."""
    __tracebackhide__ = True
    g = np.random.default_rng(8)
    _compare_array_sum(fn, [_f32(g, n) for n in (1000, 77)], visible=True)


def _compare_array_sum(fn: Any, cases: Sequence[np.ndarray], ref: Any = None, *, visible: bool = False) -> None:
    """Each case x against NumPy's sum; at most one atomic addition per block."""
    __tracebackhide__ = True
    for i, x in enumerate(cases):
        n = len(x)
        what = f"array_sum on n = {n}"
        data = _run(fn, (x,), what, sanitize=_sanitize(visible and i == 0))
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

_OCC_VISIBLE = [("V100", 128, 17, 20, "the lecture's Nsight Compute table (80-SM Volta)"),
                ("A100", 256, 32, 40_000, "an A100 kernel"),
                ("H100-SXM", 100, 40, 10_000, "an H100 kernel whose last warp is partial")]


@exercise
def occupancy(fn: Callable) -> None:
    """``fn(limits, threads_per_block, registers_per_thread, shared_bytes)`` -> (blocks, limiter, limits)."""
    __tracebackhide__ = True
    cases = [Case((sm_limits(name), t, r, s), label=f"{lab}: {t} threads, {r} registers, {s} bytes of shared memory")
             for name, t, r, s, lab in _OCC_VISIBLE]
    _compare_occupancy(fn, cases, expected(LAB))


def _compare_occupancy(fn: Any, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.occupancy_triple, cases, label="occupancy", compare=_compare_limits)


def _compare_limits(actual: Any, expected: tuple[int, str, dict]) -> None:
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

@exercise
def waves(fn: Callable) -> None:
    """``fn(grid, blocks_per_sm, sms)`` -> (waves, efficiency)."""
    __tracebackhide__ = True
    cases = [Case((4132, 16, 80), label="the lecture's 4,132 blocks, 16 per SM, 80 SMs"),
             Case((12, 1, 8), label="the lecture's 12 blocks on 8 SMs, one block per SM"),
             Case((1056, 8, 132), label="exactly one wave on an H100")]
    _compare_waves(fn, cases, expected(LAB))


def _compare_waves(fn: Any, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.waves_pair, cases, label="waves", compare=_compare_pair,
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
def sectors(fn: Callable) -> None:
    """``fn(addresses, access_bytes)`` -> distinct 32-byte sectors a warp's accesses touch."""
    __tracebackhide__ = True
    cases = [Case((_warp(1, 4), 4), label="32 consecutive FP32 values (stride 1)"),
             Case((_warp(2, 4), 4), label="FP32 with stride 2"),
             Case((_warp(32, 4), 4), label="FP32 with stride 32"),
             Case(([5], 1), label="one thread reading one byte: the lecture's 32 B fetched to use 1 B"),
             Case((_warp(1, 4, offset=4), 4), label="stride 1 starting one element past a sector boundary")]
    _compare_sectors(fn, cases, expected(LAB))


def _compare_sectors(fn: Any, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.sectors, cases, label="sectors", compare=_compare_count, what="sectors",
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
def bank_conflicts(fn: Callable) -> None:
    """``fn(word_indices)`` -> the degree of conflict of a warp's shared-memory access."""
    __tracebackhide__ = True
    cases = [Case((list(range(32)),), label="32 consecutive words"),
             Case(([2 * t for t in range(32)],), label="stride 2"),
             Case((_memory.column_indices(32),), label="a column of a 32 x 32 tile"),
             Case((_memory.column_indices(33),), label="a column of the tile padded to 33 words per row"),
             Case(([7] * 32,), label="every thread reads the same word (a broadcast)")]
    _compare_bank_conflicts(fn, cases, expected(LAB))


def _compare_bank_conflicts(fn: Any, cases: Sequence[Case], ref: Any) -> None:
    __tracebackhide__ = True
    check_cases(fn, ref.bank_conflicts, cases, label="bank conflicts", compare=_compare_count,
                what="-way conflict",
                hint="the most *different* words in one bank (word % 32); threads reading one word share it")


# --- 12. questions -----------------------------------------------------------------------------------
# The visible check says whether the answer is one letter of those offered; which letter is right
# is the hidden check's to say (four letters would be four tries).

def _one_letter(answer: Any, name: str, allowed: str = "ABCD") -> str:
    __tracebackhide__ = True
    letters = choice_letters(answer, allowed)
    if len(letters) != 1:
        raise GradingError(f"set {name} to one letter of {', '.join(allowed)}, got {answer!r}")
    return letters


@exercise
@question
def limiter_question(answer: Any) -> None:
    __tracebackhide__ = True
    _one_letter(answer, "LIMITER_ANSWER")


@exercise
@question
def stride_question(answer: Any) -> None:
    __tracebackhide__ = True
    _one_letter(answer, "STRIDE_ANSWER")


__all__ = ["run_kernels", "launch_shape", "global_index", "saxpy", "add_bias", "stencil", "matmul", "array_sum",
           "occupancy", "waves", "sectors", "bank_conflicts", "limiter_question", "stride_question"]
