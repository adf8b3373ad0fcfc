"""The hidden cases of lab05_layouts_conv, judged against ``gpudl_instructor.references.lab05``.

Each check draws its cases with ``rng("lab05.NAME")`` (the student's seed when graded) and hands
them to the visible check's comparison (``gpudl.grading.lab05._compare_NAME``) with the live
reference in place of the visible cases' oracle. The two questions' verdicts are here: the
visible checks only say whether an answer has the right form.
"""
from __future__ import annotations

import numpy as np
import torch

from gpudl import layout
from gpudl.conv import Algo, ConvolutionDescriptor
from gpudl.grading import Case, GradingError, answer_digest, lab05 as visible, rng

from ..references import lab05 as ref
from . import hidden

LAB = "lab05"


def _format_cases(g: np.random.Generator, n: int) -> list[tuple[tuple[int, ...], str]]:
    """``n`` (dims, format): 4-D or 5-D, a named format or any ordering of the letters."""
    out = []
    for _ in range(n):
        rank = int(g.choice([4, 4, 5]))
        dims = tuple(int(d) for d in g.integers(1, 9, size=rank))
        named = [f for f in layout.FORMATS if len(f) == rank]
        fmt = str(g.choice(named)) if g.random() < 0.6 else "".join(g.permutation(list(layout.LOGICAL[rank])))
        out.append((dims, fmt))
    return out


def _conv_case(g: np.random.Generator, groups_max: int = 1) -> tuple:
    """(x, w, pad, stride, dilation, groups) of a small convolution whose output is not empty."""
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


# --- 1. strides and offsets ------------------------------------------------------------------

@hidden(visible.strides)
def strides(fn):
    __tracebackhide__ = True
    chosen = _format_cases(rng(f"{LAB}.strides"), 10) + [((2, 3, 4, 5, 6), "NDHWC"), ((3, 1, 1, 7), "NHWC"),
                                                         ((2, 3, 4, 5, 6), "CDHWN")]
    visible._compare_strides(fn, [Case((d, f)) for d, f in chosen], ref.format_strides)


@hidden(visible.offset)
def offset(fn):
    __tracebackhide__ = True
    g = rng(f"{LAB}.offset")
    cases = []
    for dims, fmt in _format_cases(g, 8):
        coord = tuple(int(g.integers(0, d)) for d in dims)
        cases.append(Case((coord, ref.format_strides(dims, fmt))))
    cases.append(Case(((1, 2, 3), (100, 7, 1)), label="a padded (non-compact) 3-D layout"))
    visible._compare_offset(fn, cases, ref.offset)


# --- 2. NCHW <-> NHWC ---------------------------------------------------------------------------

@hidden(visible.convert)
def convert(to_nhwc, to_nchw):
    __tracebackhide__ = True
    g = rng(f"{LAB}.convert")
    shapes = [tuple(int(d) for d in g.integers(1, 7, size=4)) for _ in range(4)] + [(2, 2, 2, 2), (3, 4, 5, 6)]
    visible._compare_convert(to_nhwc, to_nchw, [torch.tensor(g.standard_normal(s)) for s in shapes])


# --- 3. output dims ----------------------------------------------------------------------------

@hidden(visible.output_dim)
def output_dim(fn):
    __tracebackhide__ = True
    g = rng(f"{LAB}.output_dim")
    cases = []
    while len(cases) < 10:
        h, r, pad, u, d = (int(g.integers(1, 40)), int(g.integers(1, 8)), int(g.integers(0, 4)),
                           int(g.integers(1, 4)), int(g.integers(1, 4)))
        if h + 2 * pad >= (r - 1) * d + 1:
            cases.append(Case((h, r, pad, u, d)))
    cases += [Case((5, 5, 0, 1, 1), label="a filter as large as the input"),
              Case((6, 3, 2, 3, 2), label="pad 2, stride 3, dilation 2")]
    visible._compare_output_dim(fn, cases, ref.output_size)


# --- 4. im2col and convolution as GEMM -------------------------------------------------------------

@hidden(visible.im2col)
def im2col(fn):
    __tracebackhide__ = True
    g = rng(f"{LAB}.im2col")
    cases = []
    for _ in range(6):
        x, wt, pad, stride, dil, _groups = _conv_case(g)
        cases.append(Case((x, wt.shape[2], wt.shape[3], pad, stride, dil)))
    cases.append(Case((torch.tensor(g.standard_normal((1, 2, 9, 9))), 3, 3, 0, 1, 3), label="dilation 3"))
    cases.append(Case((torch.tensor(g.standard_normal((2, 1, 5, 8))), 2, 3, 2, 3, 1), label="pad 2, stride 3"))
    visible._compare_im2col(fn, cases, lambda x, r, s, pad, stride, dil:
                            ref.im2col(x, r, s, ConvolutionDescriptor(pad, stride, dil)))


@hidden(visible.conv2d_gemm)
def conv2d_gemm(fn):
    __tracebackhide__ = True
    g = rng(f"{LAB}.conv2d_gemm")
    cases = []
    for i in range(8):
        x, wt, pad, stride, dil, groups = _conv_case(g, groups_max=3)
        cases.append(Case((x, wt, pad, stride, dil, groups, ("CONVOLUTION", "CROSS_CORRELATION")[i % 2])))
    x = torch.tensor(g.standard_normal((1, 6, 7, 7)))
    cases.append(Case((x, torch.tensor(g.standard_normal((6, 1, 3, 3))), 1, 1, 1, 6, "CONVOLUTION"),
                      label="a depthwise convolution (groups = C)"))
    cases.append(Case((x, torch.tensor(g.standard_normal((4, 3, 2, 3))), 0, 1, 2, 2, "CONVOLUTION"),
                      label="groups=2, dilation 2, CONVOLUTION mode, a 2x3 filter"))

    def gemm(x, w, pad, stride, dilation, groups, mode):
        return ref.conv_forward(x, w, ConvolutionDescriptor(pad, stride, dilation, mode=mode, groups=groups), Algo.GEMM)

    visible._compare_conv2d_gemm(fn, cases, gemm)


# --- 5. Winograd ----------------------------------------------------------------------------------

@hidden(visible.winograd_f23)
def winograd_f23(fn, bt, gm, at):
    __tracebackhide__ = True
    g = rng(f"{LAB}.winograd_f23")
    visible._compare_winograd_f23(fn, bt, gm, at, [(g.standard_normal(4), g.standard_normal(3)) for _ in range(8)])


@hidden(visible.winograd_conv)
def winograd_conv(fn):
    __tracebackhide__ = True
    g = rng(f"{LAB}.winograd_conv")
    shapes = [((int(g.integers(1, 3)), int(g.integers(1, 5)), int(g.integers(3, 12)), int(g.integers(3, 12))),
               int(g.integers(1, 5))) for _ in range(5)] + [((1, 2, 7, 9), 3), ((2, 1, 3, 3), 2)]
    visible._compare_winograd_conv(fn, visible._winograd_cases(g, shapes),
                                   lambda x, w: ref.conv_winograd(x, w, ConvolutionDescriptor()))


# --- 6. workspaces --------------------------------------------------------------------------------

@hidden(visible.workspace_bytes)
def workspace_bytes(fn):
    __tracebackhide__ = True
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
    visible._compare_workspace_bytes(fn, cases, ref.workspace_bytes)


# --- 7. find --------------------------------------------------------------------------------------

@hidden(visible.find)
def find(fn):
    __tracebackhide__ = True
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
    visible._compare_find(fn, setups, ref.find_records)


# --- 8. questions -----------------------------------------------------------------------------------

_SAVING = "6d6bd6c39d24c833df598987c763a245"
_FLATTEN = "cef0147051bb534510658e9855dbc226"


@hidden(visible.winograd_saving)
def winograd_saving(answer):
    __tracebackhide__ = True
    value = visible._saving_value(answer)
    if answer_digest(LAB, f"{value:.4f}") != _SAVING:
        raise GradingError(f"{value:g} is not it. Count the multiplies for one 2x2 output tile and one channel: "
                           "directly, each output takes 3x3 of them; Winograd multiplies two 4x4 tiles elementwise")


@hidden(visible.flatten_layout)
def flatten_layout(answer):
    __tracebackhide__ = True
    fmt = visible._flatten_format(answer)
    if answer_digest(LAB, fmt) != _FLATTEN:
        raise GradingError(f"{answer!r} is not it. Write the pooled tensor out: qc[..., 0] = [[9, 9], [9, 9]] and "
                           "qc[..., 1] = [[7, 1], [6, 0]]; which index varies slowest in [9 9 9 9 7 1 6 0]?")
