"""Checks for lab05_layouts_conv.

Each check takes the student's function and ``hidden=False`` (the public cases shown in the
released notebook) or ``hidden=True`` (cases drawn from the instructor's secret seed, plus
edge cases). The reference answers come from ``gpudl.layout`` and ``gpudl.conv``, which the
student's code may not call while it is checked; nor may it call torch's own convolution,
unfold or fold.

The find exercise is graded without timing anything: the student's find gets candidates
whose ``run`` only records that it was called, and a fake timer that reports known times.

Two checks look at objects of the student's process, through ``@student_side`` adapters that
return plain data: the layout conversion (whether the result shares memory with the input, and
whether it is stored in its own order) and find (the fake candidates and timer are made there;
the adapter returns the records and which candidates were timed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from .. import bench, conv, layout
from ..conv import Algo, ConvolutionDescriptor
from . import (Case, GradingError, answer_digest, assert_close, assert_equal, call_student, check_cases, exercise, rng,
               run_student, student_side)

LAB = "lab05"

# Library routines that would do an exercise's work: a student may not call them.
TORCH_CONV = ["torch.nn.functional.conv2d", "torch.conv2d", "torch.nn.functional.conv_transpose2d",
              "torch.nn.functional.unfold", "torch.nn.functional.fold", "torch.Tensor.unfold"]
PACKAGE_CONV = [conv.conv_direct, conv.conv_im2col, conv.conv_implicit_gemm, conv.conv_fft, conv.conv_winograd,
                conv.conv_forward, conv.im2col, conv.winograd_1d]


def _format_cases(g: np.random.Generator, n: int) -> list[tuple[tuple[int, ...], str]]:
    out = []
    for _ in range(n):
        rank = int(g.choice([4, 4, 5]))
        dims = tuple(int(d) for d in g.integers(1, 9, size=rank))
        named = [f for f in layout.FORMATS if len(f) == rank]
        fmt = str(g.choice(named)) if g.random() < 0.6 else "".join(g.permutation(list(layout.LOGICAL[rank])))
        out.append((dims, fmt))
    return out


# --- 1. strides and offsets ------------------------------------------------------------------

@exercise
def strides(fn: Callable, hidden: bool = False) -> None:
    """``fn(dims, fmt)`` -> strides in the logical order of ``dims``."""
    __tracebackhide__ = True
    if not hidden:
        chosen = [((1, 64, 5, 4), "NCHW"), ((1, 64, 5, 4), "NHWC"), ((2, 3, 5, 4), "CHWN")]
        cases = [Case((d, f), label=f"dims {d} (N, C, H, W) stored {f}") for d, f in chosen]
    else:
        chosen = _format_cases(rng(f"{LAB}.strides"), 10) + [((2, 3, 4, 5, 6), "NDHWC"), ((3, 1, 1, 7), "NHWC"),
                                                             ((2, 3, 4, 5, 6), "CDHWN")]
        cases = [Case((d, f)) for d, f in chosen]
    check_cases(fn, lambda d, f: layout.format_strides(d, f), cases, compare=_compare_tuple,
                forbid=[layout.format_strides, layout.permutation_strides, layout.row_major_strides],
                label="strides of a format", name="strides",
                hint="strides come back in the logical order of dims (N, C, H, W), not in the format's order; "
                     "the format's last letter has stride 1")


def _compare_tuple(actual: Any, expected: tuple, *, name: str, hint: str) -> None:
    __tracebackhide__ = True
    try:
        actual = tuple(int(v) for v in actual)
    except (TypeError, ValueError):
        raise GradingError(f"your {name} is {actual!r}: return a tuple of ints") from None
    assert_equal(actual, tuple(expected), name=name, hint=hint)


@exercise
def offset(fn: Callable, hidden: bool = False) -> None:
    """``fn(coord, strides)`` -> the element offset of ``coord``."""
    __tracebackhide__ = True
    table = layout.format_strides((1, 64, 5, 4), "NCHW")
    if not hidden:
        cases = [Case(((0, 1, 0, 0), table), label="channel 1 of the lecture's NCHW table (starts at 20)"),
                 Case(((0, 32, 0, 0), table), label="channel 32 of the lecture's table (starts at 640)"),
                 Case(((0, 63, 4, 3), table), label="the last element of the lecture's table (1279)")]
    else:
        g = rng(f"{LAB}.offset")
        cases = []
        for dims, fmt in _format_cases(g, 8):
            coord = tuple(int(g.integers(0, d)) for d in dims)
            cases.append(Case((coord, layout.format_strides(dims, fmt))))
        cases.append(Case(((1, 2, 3), (100, 7, 1)), label="a padded (non-compact) 3-D layout"))
    check_cases(fn, lambda c, s: layout.offset(c, s), cases, forbid=[layout.offset], label="offsets",
                compare=lambda a, e: assert_equal(int(a) if isinstance(a, (int, np.integer)) else a, e, name="offset",
                                                  hint="the offset is sum(coord[i] * strides[i]), indices from 0"))


# --- 2. NCHW <-> NHWC ---------------------------------------------------------------------------

@student_side
def _convert_watched(fn: Callable, src: torch.Tensor) -> dict[str, Any]:
    """(Student side) ``fn(src)``: the result, whether it is contiguous, and whether it shares
    memory with ``src`` (which only this process can see)."""
    out = fn(src)
    tensor = isinstance(out, torch.Tensor)
    return {"out": out, "contiguous": bool(tensor and out.is_contiguous()),
            "view": bool(tensor and layout.is_view(out, src))}


@exercise
def convert(to_nhwc: Callable, to_nchw: Callable, hidden: bool = False) -> None:
    """``to_nhwc(x)`` (N, C, H, W) -> new contiguous (N, H, W, C), and ``to_nchw`` back."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.convert") if hidden else np.random.default_rng(5)
    shapes = [(1, 3, 2, 4), (2, 5, 3, 3)] if not hidden else \
        [tuple(int(d) for d in g.integers(1, 7, size=4)) for _ in range(4)] + [(2, 2, 2, 2), (3, 4, 5, 6)]
    forbid = [layout.nchw_to_nhwc, layout.nhwc_to_nchw, layout.to_format, layout.convert]
    for shape in shapes:
        x = torch.tensor(g.standard_normal(shape))
        for fn, src, expected, what in ((to_nhwc, x, x.permute(0, 2, 3, 1), "NCHW -> NHWC"),
                                        (to_nchw, x.permute(0, 2, 3, 1).contiguous(), x, "NHWC -> NCHW")):
            name = getattr(fn, "__name__", "your function")
            seen = run_student(_convert_watched, fn, src, forbid=forbid, label="layout conversion",
                               what=f"{name} on shape {tuple(src.shape)}")
            out = seen["out"]
            if not isinstance(out, torch.Tensor):
                raise GradingError(f"{name} returned {type(out).__name__}: return a torch tensor")
            try:
                assert_close(out, expected, rtol=0, atol=0, name=f"{what} result")
            except GradingError as exc:
                raise GradingError(f"{name} on shape {tuple(src.shape)}:\n{exc}\n"
                                   "NHWC puts the channel last: (N, C, H, W) -> (N, H, W, C) is permute(0, 2, 3, 1); "
                                   "reshape keeps the memory order and only relabels it") from None
            if not seen["contiguous"]:
                raise GradingError(f"{name}: the values are right but the result is a strided view of the input, "
                                   "not stored in the new order: the exercise asks for a copy (.contiguous())")
            if seen["view"] and not expected.is_contiguous():
                raise GradingError(f"{name}: the result shares memory with the input: return a copy")


# --- 3. output dims ----------------------------------------------------------------------------

@exercise
def output_dim(fn: Callable, hidden: bool = False) -> None:
    """``fn(h, r, pad, stride, dilation)`` -> output size."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((128, 3, 1, 1, 1), label="the lecture's 128x128 input, 3x3, pad 1"),
                 Case((7, 3, 0, 2, 1), label="the lecture's NHWC CNN: 7 wide, 3x3, stride 2"),
                 Case((10, 3, 0, 1, 2), label="a 3x3 filter with dilation 2")]
    else:
        g = rng(f"{LAB}.output_dim")
        cases = []
        while len(cases) < 10:
            h, r, pad, u, d = (int(g.integers(1, 40)), int(g.integers(1, 8)), int(g.integers(0, 4)),
                               int(g.integers(1, 4)), int(g.integers(1, 4)))
            if h + 2 * pad >= (r - 1) * d + 1:
                cases.append(Case((h, r, pad, u, d)))
        cases += [Case((5, 5, 0, 1, 1), label="a filter as large as the input"),
                  Case((6, 3, 2, 3, 2), label="pad 2, stride 3, dilation 2")]
    check_cases(fn, conv.output_size, cases, forbid=[conv.output_size, conv.output_dims], label="output dims",
                compare=lambda a, e: assert_equal(a, e, name="output size",
                                                  hint="1 + (h + 2*pad - ((r-1)*dilation + 1)) // stride: padding on "
                                                       "both sides, the dilated filter's span, floor division"))


# --- 4. im2col and convolution as GEMM -------------------------------------------------------------

def _conv_case(g: np.random.Generator, groups_max: int = 1) -> tuple:
    while True:
        groups = int(g.integers(1, groups_max + 1))
        n, cg, kg = int(g.integers(1, 3)), int(g.integers(1, 4)), int(g.integers(1, 4))
        h, w = int(g.integers(3, 10)), int(g.integers(3, 10))
        r, s = int(g.integers(1, 4)), int(g.integers(1, 4))
        pad, stride, dil = int(g.integers(0, 3)), int(g.integers(1, 3)), int(g.integers(1, 3))
        if h + 2 * pad >= (r - 1) * dil + 1 and w + 2 * pad >= (s - 1) * dil + 1:
            x = torch.tensor(g.standard_normal((n, groups * cg, h, w)))
            wt = torch.tensor(g.standard_normal((groups * kg, cg, r, s)))
            return x, wt, pad, stride, dil, groups


@exercise
def im2col(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, r, s, pad, stride, dilation)`` -> (N, C*R*S, P*Q), rows ordered (c, r, s)."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.im2col") if hidden else np.random.default_rng(7)
    if not hidden:
        x = torch.arange(2 * 4 * 4, dtype=torch.float64).reshape(1, 2, 4, 4)
        cases = [Case((x, 3, 3, 0, 1, 1), label="a 1x2x4x4 arange input, 3x3, no padding"),
                 Case((x, 3, 3, 1, 1, 1), label="the same with pad 1"),
                 Case((x, 3, 3, 1, 1, 2), label="the same with pad 1 and dilation 2 (taps 2 apart)"),
                 Case((torch.tensor(g.standard_normal((2, 3, 7, 6))), 3, 2, 1, 2, 1), label="2x3x7x6, 3x2, pad 1, stride 2")]
    else:
        cases = []
        for _ in range(6):
            x, wt, pad, stride, dil, _g = _conv_case(g)
            cases.append(Case((x, wt.shape[2], wt.shape[3], pad, stride, dil)))
        cases.append(Case((torch.tensor(g.standard_normal((1, 2, 9, 9))), 3, 3, 0, 1, 3), label="dilation 3"))
        cases.append(Case((torch.tensor(g.standard_normal((2, 1, 5, 8))), 2, 3, 2, 3, 1), label="pad 2, stride 3"))
    ref = lambda x, r, s, pad, stride, dil: conv.im2col(x, r, s, ConvolutionDescriptor(pad, stride, dil))  # noqa: E731
    check_cases(fn, ref, cases, forbid=PACKAGE_CONV + TORCH_CONV, label="im2col", name="lowered matrix",
                rtol=0, atol=0)


def _gemm_ref(x, w, pad, stride, dilation, groups, mode):
    cd = ConvolutionDescriptor(pad, stride, dilation, mode=mode, groups=groups)
    return conv.conv_forward(x, w, cd, Algo.GEMM)


@exercise
def conv2d_gemm(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, w, pad, stride, dilation, groups, mode)`` -> (N, K, P, Q)."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.conv2d_gemm") if hidden else np.random.default_rng(11)
    if not hidden:
        x = torch.tensor(g.standard_normal((2, 4, 6, 5)))
        w = torch.tensor(g.standard_normal((6, 4, 3, 3)))
        w2 = torch.tensor(g.standard_normal((6, 2, 3, 3)))
        cases = [Case((x, w, 1, 1, 1, 1, "CROSS_CORRELATION"), label="2x4x6x5, 6 filters 3x3, pad 1"),
                 Case((x, w, 1, 1, 1, 1, "CONVOLUTION"), label="the same in CONVOLUTION mode"),
                 Case((x, w2, 0, 2, 1, 2, "CROSS_CORRELATION"), label="groups=2, stride 2"),
                 Case((x, w, 2, 1, 2, 1, "CROSS_CORRELATION"), label="dilation 2, pad 2")]
    else:
        cases = []
        for i in range(8):
            x, wt, pad, stride, dil, groups = _conv_case(g, groups_max=3)
            cases.append(Case((x, wt, pad, stride, dil, groups, ("CONVOLUTION", "CROSS_CORRELATION")[i % 2])))
        x = torch.tensor(g.standard_normal((1, 6, 7, 7)))
        cases.append(Case((x, torch.tensor(g.standard_normal((6, 1, 3, 3))), 1, 1, 1, 6, "CONVOLUTION"),
                          label="a depthwise convolution (groups = C)"))
        cases.append(Case((x, torch.tensor(g.standard_normal((4, 3, 2, 3))), 0, 1, 2, 2, "CONVOLUTION"),
                          label="groups=2, dilation 2, CONVOLUTION mode, a 2x3 filter"))
    check_cases(fn, _gemm_ref, cases, forbid=PACKAGE_CONV + TORCH_CONV, label="convolution as GEMM",
                name="output", dtype="fp64", k=64,
                hints={-1.0: "the sign is flipped"})


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


@exercise
def winograd_f23(fn: Callable, bt: Any, gm: Any, at: Any, hidden: bool = False) -> None:
    """``fn(d, g)`` -> the 2 outputs of F(2, 3); the matrices ``BT`` (4x4), ``G`` (4x3), ``AT`` (2x4)
    must satisfy ``AT @ ((G @ g) * (BT @ d)) == correlate(d, g)`` for every d, g."""
    __tracebackhide__ = True
    bt, gm, at = _matrices(bt, gm, at)
    g = rng(f"{LAB}.winograd_f23") if hidden else np.random.default_rng(13)
    pairs = [(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 0.0, -1.0]))] if not hidden else []
    pairs += [(g.standard_normal(4), g.standard_normal(3)) for _ in range(3 if not hidden else 8)]
    for d, w in pairs:
        expected = np.correlate(d, w, mode="valid")            # y[i] = sum_r d[i + r] w[r]
        with_matrices = at @ ((gm @ w) * (bt @ d))
        try:
            assert_close(with_matrices, expected, name="AT @ ((G @ g) * (BT @ d)) with your matrices")
        except GradingError as exc:
            raise GradingError(f"d={d.round(3).tolist()}, g={w.round(3).tolist()}:\n{exc}\n"
                               "check each matrix against the lecture's; B^T multiplies d, so BT is B transposed") from None
        got = call_student(fn, torch.tensor(d), torch.tensor(w), forbid=PACKAGE_CONV, label="Winograd F(2,3)",
                           what="winograd_f23")
        try:
            assert_close(got, expected, name="winograd_f23 result")
        except GradingError as exc:
            raise GradingError(f"winograd_f23(d={d.round(3).tolist()}, g={w.round(3).tolist()}):\n{exc}") from None


@exercise
def winograd_conv(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, w)`` -> the stride-1 cross-correlation (N, K, H-2, W-2) of an (already padded)
    input with 3x3 filters, by Winograd F(2x2, 3x3)."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.winograd_conv") if hidden else np.random.default_rng(17)
    shapes = [((1, 1, 4, 4), 1), ((2, 3, 6, 8), 4), ((1, 2, 7, 9), 3)] if not hidden else \
        [((int(g.integers(1, 3)), int(g.integers(1, 5)), int(g.integers(3, 12)), int(g.integers(3, 12))),
          int(g.integers(1, 5))) for _ in range(5)] + [((1, 2, 7, 9), 3), ((2, 1, 3, 3), 2)]
    cases = []
    for (n, c, h, w), k in shapes:
        label = f"x {(n, c, h, w)}, {k} filters" + (" (odd output size)" if (h - 2) % 2 or (w - 2) % 2 else "")
        cases.append(Case((torch.tensor(g.standard_normal((n, c, h, w))), torch.tensor(g.standard_normal((k, c, 3, 3)))),
                          label=label))
    check_cases(fn, lambda x, w: conv.conv_winograd(x, w, ConvolutionDescriptor()), cases,
                forbid=PACKAGE_CONV + TORCH_CONV, label="Winograd F(2x2, 3x3)", name="output", dtype="fp64", k=64)


# --- 6. workspaces --------------------------------------------------------------------------------

_DTYPE_OF = {4: "fp32", 8: "fp64"}


def _workspace_ref(algo, x_shape, w_shape, pad, stride, dilation, groups, bytes_per_element):
    cd = ConvolutionDescriptor(pad, stride, dilation, groups=groups)
    dt = _DTYPE_OF[bytes_per_element]
    return conv.workspace_size(algo, conv.TensorDescriptor(dt, x_shape), conv.FilterDescriptor(dt, "NCHW", *w_shape), cd)


@exercise
def workspace_bytes(fn: Callable, hidden: bool = False) -> None:
    """``fn(algo, x_shape, w_shape, pad, stride, dilation, groups, bytes_per_element)`` -> bytes."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case(("GEMM", (1, 128, 128, 128), (128, 128, 3, 3), 1, 1, 1, 1, 4), label="the lecture's 3x3 case (72 MB)"),
                 Case(("GEMM", (1, 128, 128, 128), (128, 128, 11, 11), 5, 1, 1, 1, 4), label="the lecture's 11x11 case (968 MB)"),
                 Case(("IMPLICIT_GEMM", (1, 128, 128, 128), (128, 128, 3, 3), 1, 1, 1, 1, 4), label="IMPLICIT_GEMM"),
                 Case(("WINOGRAD", (2, 4, 8, 8), (6, 4, 3, 3), 1, 1, 1, 1, 4), label="WINOGRAD, 2x4x8x8, 6 filters"),
                 Case(("WINOGRAD", (1, 2, 9, 6), (3, 2, 3, 3), 0, 1, 1, 1, 4),
                      label="WINOGRAD with an odd P = 7: ceil(P/2) tiles down"),
                 Case(("GEMM", (2, 4, 11, 9), (6, 2, 3, 3), 1, 2, 1, 2, 4),
                      label="GEMM on a batch of 2, stride 2 (P*Q = 6*5 output pixels), groups=2")]
    else:
        g = rng(f"{LAB}.workspace_bytes")
        cases = []
        for i in range(9):
            algo = ("GEMM", "WINOGRAD", "IMPLICIT_GEMM")[i % 3]
            groups = int(g.integers(1, 3))
            n, c, k = int(g.integers(1, 9)), groups * int(g.integers(1, 33)), groups * int(g.integers(1, 33))
            h, w = int(g.integers(5, 70)), int(g.integers(5, 70))
            r = 3 if algo == "WINOGRAD" else int(g.choice([1, 3, 5, 7]))
            pad = int(g.integers(0, 3))
            stride, dil = (1, 1) if algo == "WINOGRAD" else (int(g.integers(1, 3)), int(g.integers(1, 3)))
            if h + 2 * pad < (r - 1) * dil + 1 or w + 2 * pad < (r - 1) * dil + 1:
                continue
            cases.append(Case((algo, (n, c, h, w), (k, c // groups, r, r), pad, stride, dil, groups,
                               int(g.choice([4, 8])))))
        cases += [Case(("WINOGRAD", (3, 2, 9, 6), (4, 2, 3, 3), 0, 1, 1, 1, 8), label="WINOGRAD with odd P = 7"),
                  Case(("GEMM", (4, 6, 20, 20), (6, 3, 3, 3), 1, 2, 1, 2, 4), label="GEMM, stride 2, groups 2"),
                  Case(("GEMM", (2, 4, 11, 9), (5, 4, 3, 3), 1, 1, 2, 1, 8), label="GEMM with dilation 2")]
    check_cases(fn, _workspace_ref, cases, forbid=[conv.workspace_size], label="workspace sizes",
                compare=lambda a, e: assert_equal(a, e, name="workspace (bytes)",
                                                  hint="see the formulas above: GEMM lowers the whole batch; "
                                                       "Winograd counts ceil(P/2) x ceil(Q/2) tiles per image"))


# --- 7. find --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """One algorithm a find tries: its name, a function that runs it, whether it supports the
    problem, and its workspace in bytes."""

    name: str
    run: Callable[[], Any]
    supported: bool = True
    workspace: int = 0


def find_reference(candidates: Sequence[Candidate], timer: Callable, workspace_limit: int | None = None) -> list:
    """Records (name, status, seconds, workspace bytes): SUCCESS by increasing median time,
    then the others in the order given."""
    ran, others = [], []
    for c in candidates:
        if not c.supported:
            others.append((c.name, "NOT_SUPPORTED", math.inf, c.workspace))
        elif workspace_limit is not None and c.workspace > workspace_limit:
            others.append((c.name, "ALLOC_FAILED", math.inf, c.workspace))
        else:
            ran.append((c.name, "SUCCESS", timer(c.run).median, c.workspace))
    return sorted(ran, key=lambda rec: rec[2]) + others


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


_LECTURE_TABLE = [("GEMM", (0.76e-3, 0.75e-3, 0.77e-3, 9.0e-3), 72 * 2**20),
               ("IMPLICIT_GEMM", (0.62e-3, 0.61e-3, 0.63e-3), 0),
               ("FFT", (45.3e-3, 45.0e-3, 45.6e-3), 8322 * 2**20),
               ("WINOGRAD", (0.26e-3, 0.25e-3, 0.27e-3, 2.0e-3), int(1.56 * 2**20))]


def _find_setups(hidden: bool) -> list[tuple[list[tuple], dict, int | None, str]]:
    """(rows (name, times, workspace, supported), limit, label) for each case."""
    table = [(n, t, m, True) for n, t, m in _LECTURE_TABLE]
    if not hidden:
        return [(table, None, "the lecture's 3x3 table (Quadro GV100)"),
                ([r if r[0] != "WINOGRAD" else (r[0], r[1], r[2], False) for r in table], 100 * 2**20,
                 "the lecture's 11x11 case: WINOGRAD unsupported, 100 MiB workspace limit")]
    g = rng(f"{LAB}.find")
    setups = []
    for i in range(4):
        rows = []
        for j in range(int(g.integers(3, 8))):
            base = float(np.exp(g.uniform(np.log(1e-5), np.log(1e-1))))
            times = tuple(base * (1 + 0.01 * g.standard_normal()) for _ in range(int(g.integers(3, 7))))
            if g.random() < 0.5:           # a slow outlier: the mean moves, the median does not
                times = times + (base * float(g.uniform(20, 100)),)
            rows.append((f"algo{j}", times, int(g.integers(0, 10**9)), bool(g.random() < 0.8)))
        limit = None if i % 2 == 0 else int(g.integers(10**8, 10**9))
        setups.append((rows, limit, f"hidden problem {i}"))
    return setups


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


@exercise
def find(fn: Callable, hidden: bool = False) -> None:
    """``fn(candidates, timer, workspace_limit=None)`` -> records (name, status, seconds, bytes)."""
    __tracebackhide__ = True
    for rows, limit, label in _find_setups(hidden):
        fake = _Bench({name: times for name, times, _, _ in rows})
        candidates = [fake.candidate(name, ok, mem) for name, _, mem, ok in rows]
        expected = find_reference(candidates, fake.timer, limit)
        seen = run_student(_run_find, fn, [list(r) for r in rows], limit, label="find", what=f"your find on {label}")
        got, timed = seen["records"], list(seen["timed"])
        if not isinstance(got, (list, tuple)):
            raise GradingError(f"your find returned {type(got).__name__}: return a list of records")
        try:
            got = [tuple(rec) for rec in got]
        except TypeError:
            raise GradingError("each record must be a tuple (name, status, seconds, workspace bytes)") from None
        should_run = [c.name for c in candidates if c.supported and (limit is None or c.workspace <= limit)]
        if sorted(timed) != sorted(should_run):
            missing = sorted(set(should_run) - set(timed))
            extra = sorted(set(timed) - set(should_run))
            raise GradingError(f"on {label}: every supported candidate within the workspace limit is timed once with "
                               f"the timer" + (f"; not timed: {missing}" if missing else "") +
                               (f"; timed but should not be (over the limit): {extra}" if extra else "") +
                               (f"; timed more than once: {sorted(timed)}" if not (missing or extra) else ""))
        if [r[0] for r in got] != [r[0] for r in expected]:
            raise GradingError(f"on {label}: your ranking is {[r[0] for r in got]}, expected {[r[0] for r in expected]}: "
                               "successes by increasing *median* time (Measurement.median), then the candidates that "
                               "did not run, in the order given")
        for mine, want in zip(got, expected):
            if len(mine) != 4:
                raise GradingError(f"record {mine!r} should have 4 fields: (name, status, seconds, workspace bytes)")
            if str(mine[1]) != want[1]:
                raise GradingError(f"on {label}: {want[0]} has status {mine[1]!r}, expected {want[1]!r}")
            if not (mine[2] == want[2] or (math.isinf(want[2]) and math.isinf(float(mine[2])))):
                raise GradingError(f"on {label}: {want[0]}'s time is {mine[2]!r}, expected {want[2]!r} "
                                   "(the measurement's median in seconds; inf for a candidate that did not run)")
            if mine[3] != want[3]:
                raise GradingError(f"on {label}: {want[0]}'s workspace is {mine[3]!r}, expected {want[3]!r}")


# --- 8. questions -----------------------------------------------------------------------------------

_SAVING = "6d6bd6c39d24c833df598987c763a245"




@exercise
def winograd_saving(answer: Any) -> None:
    """How many times fewer multiplies F(2x2, 3x3) needs than direct convolution for a 2x2 output tile."""
    __tracebackhide__ = True
    try:
        value = float(answer)
    except (TypeError, ValueError):
        raise GradingError(f"answer with a number, got {answer!r}") from None
    if answer_digest("lab05", f"{value:.4f}") != _SAVING:
        raise GradingError(f"{value:g} is not it. Count the multiplies for one 2x2 output tile and one channel: "
                           "directly, each output takes 3x3 of them; Winograd multiplies two 4x4 tiles elementwise")


_FLATTEN = "cef0147051bb534510658e9855dbc226"


@exercise
def flatten_layout(answer: Any) -> None:
    """The lecture flattens its pooled (1, 2, 2, 2) NHWC tensor to [9 9 9 9 7 1 6 0]: whose row-major order is that?"""
    __tracebackhide__ = True
    if not isinstance(answer, str) or not answer.strip():
        raise GradingError("answer with a format string such as 'NHWC'")
    if answer_digest("lab05", answer.strip().upper()) != _FLATTEN:
        raise GradingError(f"{answer!r} is not it. Write the pooled tensor out: qc[..., 0] = [[9, 9], [9, 9]] and "
                           "qc[..., 1] = [[7, 1], [6, 0]]; which index varies slowest in [9 9 9 9 7 1 6 0]?")
