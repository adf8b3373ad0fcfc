"""Checks for lab05_layouts_conv: the visible cases.

``check.NAME(fn)`` runs the cases the released notebook shows; ``check.NAME(fn, hidden=True)``
runs the instructor's hidden cases, which reuse each check's comparison (``_compare_NAME``, whose
``answer`` argument gives the expected result of a case) and so its teaching messages.

Where the visible cases' expected values come from:

- torch, where torch computes the exercise: ``unfold`` for im2col, ``conv2d`` for the GEMM and
  Winograd convolutions, ``permute`` for the layout conversion. The student's code may not call
  torch's convolution, ``unfold`` or ``fold`` while it is checked (``TORCH_CONV``);
- NumPy's ``correlate`` for Winograd's F(2, 3);
- the lecture's and the lab's printed numbers for the offsets and the output dims;
- the values recorded when the lab was released (``expected("lab05")``) for the strides of a
  format, the workspaces and find's ranking.

The find exercise is graded without timing anything: the student's find gets candidates
whose ``run`` only records that it was called, and a fake timer that reports known times.

Two checks look at objects of the student's process, through ``@student_side`` adapters that
return plain data: the layout conversion (whether the result shares memory with the input, and
whether it is stored in its own order) and find (the fake candidates and timer are made there;
the adapter returns the records and which candidates were timed).

The two questions (``@question``) are checked here for their form only (a number above 1; a format
of the four letters); whether they are right is judged with the hidden cases, when graded.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .. import bench, conv, layout
from . import (Case, GradingError, assert_close, assert_equal, call_student, check_cases, exercise, question,
               run_student, student_side)
from .expected import expected

LAB = "lab05"

# Library routines that would do an exercise's work: a student may not call them.
# (The guard refuses each under every name torch gives it: torch.conv1d is also F.conv1d.)
TORCH_CONV = ["torch.nn.functional.conv2d", "torch.conv2d", "torch.nn.functional.conv_transpose2d",
              "torch.nn.functional.unfold", "torch.nn.functional.fold", "torch.Tensor.unfold",
              # the same work under other shapes or names: a 2-D convolution is a 3-D one of depth 1
              "torch.convolution", "torch._convolution", "torch.conv1d", "torch.conv3d", "torch.conv_tbc",
              "torch.conv_transpose1d", "torch.conv_transpose3d", "torch._C._nn.im2col", "torch._C._nn.col2im",
              "torch.unfold_copy", "torch._convolution_mode", "torch._C._nn.thnn_conv2d",
              "torch._C._nn.slow_conv_dilated2d", "torch._C._nn.slow_conv3d", "torch.cudnn_convolution",
              "torch.mkldnn_convolution", "torch.nn.grad.conv2d_input", "torch.nn.grad.conv2d_weight",
              # a convolution is a product of spectra
              "torch.fft.fft", "torch.fft.rfft", "torch.fft.fft2", "torch.fft.rfft2", "torch.fft.fftn",
              "torch.fft.rfftn"]
# NumPy's: sliding windows are im2col, correlate is F(2,3)'s answer, the FFTs a convolution
NUMPY_CONV = ["numpy.lib.stride_tricks.sliding_window_view", "numpy.correlate", "numpy.convolve", "numpy.fft.fft",
              "numpy.fft.rfft", "numpy.fft.fft2", "numpy.fft.rfft2", "numpy.fft.fftn", "numpy.fft.rfftn"]
CONV_FORBID = [*TORCH_CONV, *NUMPY_CONV]


# --- 1. strides and offsets ------------------------------------------------------------------

def _compare_tuple(actual: Any, expected: tuple, *, name: str, hint: str) -> None:
    __tracebackhide__ = True
    try:
        actual = tuple(int(v) for v in actual)
    except (TypeError, ValueError):
        raise GradingError(f"your {name} is {actual!r}: return a tuple of ints") from None
    assert_equal(actual, tuple(expected), name=name, hint=hint)


def _compare_strides(fn: Callable, cases: Sequence[Case], answer: Callable) -> None:
    """``fn(dims, fmt)`` against ``answer(dims, fmt)`` on each case."""
    __tracebackhide__ = True
    check_cases(fn, answer, cases, compare=_compare_tuple, label="strides of a format", name="strides",
                hint="strides come back in the logical order of dims (N, C, H, W), not in the format's order; "
                     "the format's last letter has stride 1")


@exercise
def strides(fn: Callable) -> None:
    """``fn(dims, fmt)`` -> strides in the logical order of ``dims``."""
    __tracebackhide__ = True
    chosen = [((1, 64, 5, 4), "NCHW"), ((1, 64, 5, 4), "NHWC"), ((2, 3, 5, 4), "CHWN")]
    cases = [Case((d, f), label=f"dims {d} (N, C, H, W) stored {f}") for d, f in chosen]
    _compare_strides(fn, cases, expected(LAB).format_strides)


def _as_offset(actual: Any) -> int:
    """An offset as the int it must be: a count of elements (an int, a NumPy integer, or a 0-d
    integer array or tensor), never a float."""
    __tracebackhide__ = True
    if actual is None:
        raise GradingError("your offset is None: did you forget a `return`?")
    if isinstance(actual, (int, np.integer)) and not isinstance(actual, bool):
        return int(actual)
    if isinstance(actual, np.ndarray) and actual.ndim == 0 and actual.dtype.kind in "iu":
        return int(actual)
    if isinstance(actual, torch.Tensor) and actual.dim() == 0 and not (
            actual.dtype.is_floating_point or actual.dtype.is_complex or actual.dtype == torch.bool):
        return int(actual)
    raise GradingError(f"your offset is {actual!r}: an offset counts elements, so it is an int (a sum of products "
                       "of ints), not a float or an array")


def _compare_offset(fn: Callable, cases: Sequence[Case], answer: Callable) -> None:
    """``fn(coord, strides)`` against ``answer(coord, strides)`` on each case."""
    __tracebackhide__ = True
    check_cases(fn, answer, cases, label="offsets",
                compare=lambda a, e: assert_equal(_as_offset(a), e, name="offset",
                                                  hint="the offset is sum(coord[i] * strides[i]), indices from 0"))


@exercise
def offset(fn: Callable) -> None:
    """``fn(coord, strides)`` -> the element offset of ``coord``."""
    __tracebackhide__ = True
    table = (1280, 20, 4, 1)               # the lecture's NCHW table, N=1 C=64 H=5 W=4
    printed = {(0, 1, 0, 0): ("channel 1 of the lecture's NCHW table (starts at 20)", 20),
               (0, 32, 0, 0): ("channel 32 of the lecture's table (starts at 640)", 640),
               (0, 63, 4, 3): ("the last element of the lecture's table (1279)", 1279)}
    cases = [Case((coord, table), label=label) for coord, (label, _) in printed.items()]
    _compare_offset(fn, cases, lambda coord, strides: printed[tuple(coord)][1])


# --- 2. NCHW <-> NHWC ---------------------------------------------------------------------------

@student_side
def _convert_watched(fn: Callable, src: torch.Tensor) -> dict[str, Any]:
    """(Student side) ``fn(src)``: the result, whether it is contiguous, and whether it shares
    memory with ``src`` (which only this process can see)."""
    out = fn(src)
    tensor = isinstance(out, torch.Tensor)
    return {"out": out, "contiguous": bool(tensor and out.is_contiguous()),
            "view": bool(tensor and layout.is_view(out, src))}


def _compare_convert(to_nhwc: Callable, to_nchw: Callable, inputs: Sequence[torch.Tensor]) -> None:
    """Each (N, C, H, W) input through ``to_nhwc``, and its NHWC copy through ``to_nchw``: the
    values of torch's ``permute``, stored in their own order, not sharing the input's memory."""
    __tracebackhide__ = True
    for x in inputs:
        for fn, src, want, what in ((to_nhwc, x, x.permute(0, 2, 3, 1), "NCHW -> NHWC"),
                                    (to_nchw, x.permute(0, 2, 3, 1).contiguous(), x, "NHWC -> NCHW")):
            name = getattr(fn, "__name__", "your function")
            seen = run_student(_convert_watched, fn, src, label="layout conversion",
                               what=f"{name} on shape {tuple(src.shape)}")
            out = seen["out"]
            if not isinstance(out, torch.Tensor):
                raise GradingError(f"{name} returned {type(out).__name__}: return a torch tensor")
            try:
                assert_close(out, want, rtol=0, atol=0, name=f"{what} result")
            except GradingError as exc:
                raise GradingError(f"{name} on shape {tuple(src.shape)}:\n{exc}\n"
                                   "NHWC puts the channel last: (N, C, H, W) -> (N, H, W, C) is permute(0, 2, 3, 1); "
                                   "reshape keeps the memory order and only relabels it") from None
            if not seen["contiguous"]:
                raise GradingError(f"{name}: the values are right but the result is a strided view of the input, "
                                   "not stored in the new order: the exercise asks for a copy (.contiguous())")
            if seen["view"] and not want.is_contiguous():
                raise GradingError(f"{name}: the result shares memory with the input: return a copy")


@exercise
def convert(to_nhwc: Callable, to_nchw: Callable) -> None:
    """``to_nhwc(x)`` (N, C, H, W) -> new contiguous (N, H, W, C), and ``to_nchw`` back."""
    __tracebackhide__ = True
    g = np.random.default_rng(5)
    _compare_convert(to_nhwc, to_nchw, [torch.tensor(g.standard_normal(s)) for s in ((1, 3, 2, 4), (2, 5, 3, 3))])


# --- 3. output dims ----------------------------------------------------------------------------

def _compare_output_dim(fn: Callable, cases: Sequence[Case], answer: Callable) -> None:
    """``fn(h, r, pad, stride, dilation)`` against ``answer`` on each case."""
    __tracebackhide__ = True
    check_cases(fn, answer, cases, label="output dims",
                compare=lambda a, e: assert_equal(a, e, name="output size",
                                                  hint="1 + (h + 2*pad - ((r-1)*dilation + 1)) // stride: padding on "
                                                       "both sides, the dilated filter's span, floor division"))


@exercise
def output_dim(fn: Callable) -> None:
    """``fn(h, r, pad, stride, dilation)`` -> output size."""
    __tracebackhide__ = True
    printed = {(128, 3, 1, 1, 1): ("the lecture's 128x128 input, 3x3, pad 1", 128),
               (7, 3, 0, 2, 1): ("the lecture's NHWC CNN: 7 wide, 3x3, stride 2", 3),
               (10, 3, 0, 1, 2): ("a 3x3 filter with dilation 2", 6)}
    cases = [Case(args, label=label) for args, (label, _) in printed.items()]
    _compare_output_dim(fn, cases, lambda *args: printed[args][1])


# --- 4. im2col and convolution as GEMM -------------------------------------------------------------

def _compare_im2col(fn: Callable, cases: Sequence[Case], answer: Callable) -> None:
    """``fn(x, r, s, pad, stride, dilation)`` against ``answer``, exactly (a copy computes nothing)."""
    __tracebackhide__ = True
    check_cases(fn, answer, cases, forbid=CONV_FORBID, label="im2col", name="lowered matrix", rtol=0, atol=0)


@exercise
def im2col(fn: Callable) -> None:
    """``fn(x, r, s, pad, stride, dilation)`` -> (N, C*R*S, P*Q), rows ordered (c, r, s)."""
    __tracebackhide__ = True
    g = np.random.default_rng(7)
    x = torch.arange(2 * 4 * 4, dtype=torch.float64).reshape(1, 2, 4, 4)
    cases = [Case((x, 3, 3, 0, 1, 1), label="a 1x2x4x4 arange input, 3x3, no padding"),
             Case((x, 3, 3, 1, 1, 1), label="the same with pad 1"),
             Case((x, 3, 3, 1, 1, 2), label="the same with pad 1 and dilation 2 (taps 2 apart)"),
             Case((torch.tensor(g.standard_normal((2, 3, 7, 6))), 3, 2, 1, 2, 1), label="2x3x7x6, 3x2, pad 1, stride 2")]

    def unfold(x, r, s, pad, stride, dilation):        # torch's im2col, in the same row order
        return torch.nn.functional.unfold(x, (r, s), dilation=dilation, padding=pad, stride=stride)

    _compare_im2col(fn, cases, unfold)


def _compare_conv2d_gemm(fn: Callable, cases: Sequence[Case], answer: Callable) -> None:
    """``fn(x, w, pad, stride, dilation, groups, mode)`` against ``answer`` (FP64)."""
    __tracebackhide__ = True
    check_cases(fn, answer, cases, forbid=CONV_FORBID, label="convolution as GEMM", name="output", dtype="fp64",
                k=64, hints={-1.0: "the sign is flipped"})


@exercise
def conv2d_gemm(fn: Callable) -> None:
    """``fn(x, w, pad, stride, dilation, groups, mode)`` -> (N, K, P, Q)."""
    __tracebackhide__ = True
    g = np.random.default_rng(11)
    x = torch.tensor(g.standard_normal((2, 4, 6, 5)))
    w = torch.tensor(g.standard_normal((6, 4, 3, 3)))
    w2 = torch.tensor(g.standard_normal((6, 2, 3, 3)))
    cases = [Case((x, w, 1, 1, 1, 1, "CROSS_CORRELATION"), label="2x4x6x5, 6 filters 3x3, pad 1"),
             Case((x, w, 1, 1, 1, 1, "CONVOLUTION"), label="the same in CONVOLUTION mode"),
             Case((x, w2, 0, 2, 1, 2, "CROSS_CORRELATION"), label="groups=2, stride 2"),
             Case((x, w, 2, 1, 2, 1, "CROSS_CORRELATION"), label="dilation 2, pad 2")]

    def torch_conv(x, w, pad, stride, dilation, groups, mode):     # CONVOLUTION: the filter flipped
        w = w.flip(-2, -1) if mode == "CONVOLUTION" else w
        return torch.nn.functional.conv2d(x, w, stride=stride, padding=pad, dilation=dilation, groups=groups)

    _compare_conv2d_gemm(fn, cases, torch_conv)


# --- 5. Winograd ----------------------------------------------------------------------------------

def _matrices(bt: Any, gm: Any, at: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    __tracebackhide__ = True
    out = []
    for name, m, shape in (("BT", bt, (4, 4)), ("G", gm, (4, 3)), ("AT", at, (2, 4))):
        arr = np.asarray(m.detach().cpu() if hasattr(m, "detach") else m, dtype=float)
        if arr.shape != shape:
            raise GradingError(f"{name} has shape {arr.shape}, expected {shape}" +
                               (": did you write its transpose?" if arr.shape == shape[::-1] else ""))
        out.append(arr)
    return tuple(out)


def _compare_winograd_f23(fn: Callable, bt: Any, gm: Any, at: Any, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
    """For each (d, g): the matrices' ``AT @ ((G @ g) * (BT @ d))`` and ``fn(d, g)`` against
    NumPy's valid correlation of d with g."""
    __tracebackhide__ = True
    bt, gm, at = _matrices(bt, gm, at)
    for d, w in pairs:
        want = np.correlate(d, w, mode="valid")                # y[i] = sum_r d[i + r] w[r]
        with_matrices = at @ ((gm @ w) * (bt @ d))
        # Rounding scales with the products summed, not with the result: an output that nearly
        # cancels (0.0018 from terms of 0.2) carries their rounding, a few ulps of 0.2.
        terms = np.correlate(np.abs(d), np.abs(w), mode="valid").max()
        rms = float(np.sqrt(np.mean(want ** 2))) or 1.0
        tol = {"rtol": 64 * np.finfo(np.float64).eps, "atol": 64 * np.finfo(np.float64).eps * terms / rms}
        try:
            assert_close(with_matrices, want, name="AT @ ((G @ g) * (BT @ d)) with your matrices", **tol)
        except GradingError as exc:
            raise GradingError(f"d={d.round(3).tolist()}, g={w.round(3).tolist()}:\n{exc}\n"
                               "check each matrix against the lecture's; B^T multiplies d, so BT is B transposed") from None
        got = call_student(fn, torch.tensor(d), torch.tensor(w), forbid=CONV_FORBID, label="Winograd F(2,3)",
                           what="winograd_f23")
        try:
            assert_close(got, want, name="winograd_f23 result", **tol)
        except GradingError as exc:
            raise GradingError(f"winograd_f23(d={d.round(3).tolist()}, g={w.round(3).tolist()}):\n{exc}") from None


@exercise
def winograd_f23(fn: Callable, bt: Any, gm: Any, at: Any) -> None:
    """``fn(d, g)`` -> the 2 outputs of F(2, 3); the matrices ``BT`` (4x4), ``G`` (4x3), ``AT`` (2x4)
    must satisfy ``AT @ ((G @ g) * (BT @ d)) == correlate(d, g)`` for every d, g."""
    __tracebackhide__ = True
    g = np.random.default_rng(13)
    pairs = [(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 0.0, -1.0]))]
    pairs += [(g.standard_normal(4), g.standard_normal(3)) for _ in range(3)]
    _compare_winograd_f23(fn, bt, gm, at, pairs)


def _winograd_cases(g: np.random.Generator, shapes: Sequence[tuple[tuple[int, int, int, int], int]]) -> list[Case]:
    """Cases (x, w) of the Winograd convolution: inputs of ``shapes`` ((N, C, H, W), K) and K
    3x3 filters, drawn from ``g``."""
    cases = []
    for (n, c, h, w), k in shapes:
        label = f"x {(n, c, h, w)}, {k} filters" + (" (odd output size)" if (h - 2) % 2 or (w - 2) % 2 else "")
        cases.append(Case((torch.tensor(g.standard_normal((n, c, h, w))), torch.tensor(g.standard_normal((k, c, 3, 3)))),
                          label=label))
    return cases


def _compare_winograd_conv(fn: Callable, cases: Sequence[Case], answer: Callable) -> None:
    """``fn(x, w)`` against ``answer(x, w)`` (FP64)."""
    __tracebackhide__ = True
    check_cases(fn, answer, cases, forbid=CONV_FORBID, label="Winograd F(2x2, 3x3)", name="output", dtype="fp64",
                k=64)


@exercise
def winograd_conv(fn: Callable) -> None:
    """``fn(x, w)`` -> the stride-1 cross-correlation (N, K, H-2, W-2) of an (already padded)
    input with 3x3 filters, by Winograd F(2x2, 3x3)."""
    __tracebackhide__ = True
    cases = _winograd_cases(np.random.default_rng(17), [((1, 1, 4, 4), 1), ((2, 3, 6, 8), 4), ((1, 2, 7, 9), 3)])
    _compare_winograd_conv(fn, cases, lambda x, w: torch.nn.functional.conv2d(x, w))


# --- 6. workspaces --------------------------------------------------------------------------------

def _compare_workspace_bytes(fn: Callable, cases: Sequence[Case], answer: Callable) -> None:
    """``fn(algo, x_shape, w_shape, pad, stride, dilation, groups, bytes_per_element)`` against ``answer``."""
    __tracebackhide__ = True
    check_cases(fn, answer, cases, label="workspace sizes",
                compare=lambda a, e: assert_equal(a, e, name="workspace (bytes)",
                                                  hint="see the formulas above: GEMM lowers the whole batch; "
                                                       "Winograd counts ceil(P/2) x ceil(Q/2) tiles per image"))


@exercise
def workspace_bytes(fn: Callable) -> None:
    """``fn(algo, x_shape, w_shape, pad, stride, dilation, groups, bytes_per_element)`` -> bytes."""
    __tracebackhide__ = True
    cases = [Case(("GEMM", (1, 128, 128, 128), (128, 128, 3, 3), 1, 1, 1, 1, 4), label="the lecture's 3x3 case (72 MB)"),
             Case(("GEMM", (1, 128, 128, 128), (128, 128, 11, 11), 5, 1, 1, 1, 4), label="the lecture's 11x11 case (968 MB)"),
             Case(("IMPLICIT_GEMM", (1, 128, 128, 128), (128, 128, 3, 3), 1, 1, 1, 1, 4), label="IMPLICIT_GEMM"),
             Case(("WINOGRAD", (2, 4, 8, 8), (6, 4, 3, 3), 1, 1, 1, 1, 4), label="WINOGRAD, 2x4x8x8, 6 filters"),
             Case(("WINOGRAD", (1, 2, 9, 6), (3, 2, 3, 3), 0, 1, 1, 1, 4),
                  label="WINOGRAD with an odd P = 7: ceil(P/2) tiles down"),
             Case(("GEMM", (2, 4, 11, 9), (6, 2, 3, 3), 1, 2, 1, 2, 4),
                  label="GEMM on a batch of 2, stride 2 (P*Q = 6*5 output pixels), groups=2")]
    _compare_workspace_bytes(fn, cases, expected(LAB).workspace_bytes)


# --- 7. find --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """One algorithm a find tries: its name, a function that runs it, whether it supports the
    problem, and its workspace in bytes."""

    name: str
    run: Callable[[], Any]
    supported: bool = True
    workspace: int = 0


@dataclass
class _Bench:
    """Fake candidates and a fake timer with known times (a slow outlier among them, so that a
    mean ranks differently from the median)."""

    times: dict[str, tuple[float, ...]]
    calls: list[str] = field(default_factory=list)
    timed: list[str] = field(default_factory=list)

    def candidate(self, name: str, supported: bool = True, workspace: int = 0) -> Candidate:
        def run() -> None:
            if not supported:
                raise conv.NotSupportedError(f"{name} does not support this problem: find must not run it")
            self.calls.append(name)
        return Candidate(name, run, supported, workspace)

    def timer(self, fn: Callable[[], Any], **_: Any) -> bench.Measurement:
        before = len(self.calls)
        for _ in range(2):                          # a warm-up call, then the "timed" one
            fn()
        ran = set(self.calls[before:])
        if len(ran) != 1:
            raise GradingError(f"the timer was given work that ran {sorted(ran) or 'no candidate'}: "
                               "pass it exactly one candidate's run")
        name = ran.pop()
        self.timed.append(name)
        return bench.Measurement(self.times[name], what=name, warmup=1)


# The lecture's 3x3 table (Quadro GV100) as fake measurements: (name, times in seconds, workspace bytes).
_LECTURE_TABLE = [("GEMM", (0.76e-3, 0.75e-3, 0.77e-3, 9.0e-3), 72 * 2**20),
                  ("IMPLICIT_GEMM", (0.62e-3, 0.61e-3, 0.63e-3), 0),
                  ("FFT", (45.3e-3, 45.0e-3, 45.6e-3), 8322 * 2**20),
                  ("WINOGRAD", (0.26e-3, 0.25e-3, 0.27e-3, 2.0e-3), int(1.56 * 2**20))]


@student_side
def _run_find(fn: Callable, rows: list, limit: int | None) -> dict[str, Any]:
    """(Student side) the student's find on fake candidates and a fake timer made from ``rows``
    (name, times, workspace, supported): its records, and the candidates the timer timed."""
    fake = _Bench({name: tuple(times) for name, times, _, _ in rows})
    candidates = [fake.candidate(name, ok, mem) for name, _, mem, ok in rows]
    got = fn(list(candidates), fake.timer, limit)
    if isinstance(got, (list, tuple)):
        got = [tuple(rec) if isinstance(rec, (list, tuple)) else rec for rec in got]
    return {"records": got, "timed": list(fake.timed)}


def _compare_find(fn: Callable, setups: Sequence[tuple[list, int | None, str]], answer: Callable) -> None:
    """For each setup (rows (name, times, workspace, supported), workspace limit, label): the
    student's find on fake candidates against ``answer(rows, limit)``, which gives the expected
    {"records": ..., "timed": the candidates a find times}."""
    __tracebackhide__ = True
    for rows, limit, label in setups:
        rows = [list(r) for r in rows]
        want = answer(rows, limit)
        expected_records, should_run = [tuple(r) for r in want["records"]], list(want["timed"])
        seen = run_student(_run_find, fn, rows, limit, label="find", what=f"your find on {label}")
        got, timed = seen["records"], list(seen["timed"])
        if not isinstance(got, (list, tuple)):
            raise GradingError(f"your find returned {type(got).__name__}: return a list of records")
        try:
            got = [tuple(rec) for rec in got]
        except TypeError:
            raise GradingError("each record must be a tuple (name, status, seconds, workspace bytes)") from None
        if sorted(timed) != sorted(should_run):
            missing = sorted(set(should_run) - set(timed))
            extra = sorted(set(timed) - set(should_run))
            raise GradingError(f"on {label}: every supported candidate within the workspace limit is timed once with "
                               f"the timer" + (f"; not timed: {missing}" if missing else "") +
                               (f"; timed but should not be (over the limit): {extra}" if extra else "") +
                               (f"; timed more than once: {sorted(timed)}" if not (missing or extra) else ""))
        if [r[0] for r in got] != [r[0] for r in expected_records]:
            raise GradingError(f"on {label}: your ranking is {[r[0] for r in got]}, expected "
                               f"{[r[0] for r in expected_records]}: successes by increasing *median* time "
                               "(Measurement.median), then the candidates that did not run, in the order given")
        for mine, want_rec in zip(got, expected_records):
            if len(mine) != 4:
                raise GradingError(f"record {mine!r} should have 4 fields: (name, status, seconds, workspace bytes)")
            if str(mine[1]) != want_rec[1]:
                raise GradingError(f"on {label}: {want_rec[0]} has status {mine[1]!r}, expected {want_rec[1]!r}")
            if not (mine[2] == want_rec[2] or (math.isinf(want_rec[2]) and math.isinf(float(mine[2])))):
                raise GradingError(f"on {label}: {want_rec[0]}'s time is {mine[2]!r}, expected {want_rec[2]!r} "
                                   "(the measurement's median in seconds; inf for a candidate that did not run)")
            if mine[3] != want_rec[3]:
                raise GradingError(f"on {label}: {want_rec[0]}'s workspace is {mine[3]!r}, expected {want_rec[3]!r}")


@exercise
def find(fn: Callable) -> None:
    """``fn(candidates, timer, workspace_limit=None)`` -> records (name, status, seconds, bytes)."""
    __tracebackhide__ = True
    table = [(n, t, m, True) for n, t, m in _LECTURE_TABLE]
    setups = [(table, None, "the lecture's 3x3 table (Quadro GV100)"),
              ([r if r[0] != "WINOGRAD" else (r[0], r[1], r[2], False) for r in table], 100 * 2**20,
               "the lecture's 11x11 case: WINOGRAD unsupported, 100 MiB workspace limit")]
    _compare_find(fn, setups, expected(LAB).find_records)


# --- 8. questions -----------------------------------------------------------------------------------

def _saving_value(answer: Any) -> float:
    """The answer to the Winograd question as a number, if it is one a saving can be: how many
    times fewer multiplications, so a number above 1."""
    __tracebackhide__ = True
    try:
        value = float(answer)
    except (TypeError, ValueError):
        raise GradingError(f"answer with a number, got {answer!r}") from None
    if not math.isfinite(value) or value <= 1:
        raise GradingError(f"{value:g} cannot be the saving: the question asks how many times *fewer* multiplications "
                           "Winograd needs, the direct count divided by Winograd's, a number above 1")
    return value


@exercise
@question
def winograd_saving(answer: Any) -> None:
    """How many times fewer multiplies F(2x2, 3x3) needs than direct convolution for a 2x2 output tile."""
    __tracebackhide__ = True
    _saving_value(answer)


def _flatten_format(answer: Any) -> str:
    """The answer to the flatten question as a format string, if it is one: the four letters N,
    C, H, W, each once."""
    __tracebackhide__ = True
    if not isinstance(answer, str) or not answer.strip():
        raise GradingError("answer with a format string such as 'NHWC'")
    fmt = answer.strip().upper()
    if sorted(fmt) != sorted("NCHW"):
        raise GradingError(f"{answer!r} is not a format of the pooled tensor: write its dims N, C, H and W, each once, "
                           "outermost first (such as 'NHWC')")
    return fmt


@exercise
@question
def flatten_layout(answer: Any) -> None:
    """The lecture flattens its pooled (1, 2, 2, 2) NHWC tensor to [9 9 9 9 7 1 6 0]: whose row-major order is that?"""
    __tracebackhide__ = True
    _flatten_format(answer)
