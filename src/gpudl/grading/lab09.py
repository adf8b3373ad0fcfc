"""Checks for lab09_profiling_and_inference: the visible cases, the examples of the released notebook.

``check.NAME(fn)`` runs them; ``check.NAME(fn, hidden=True)`` runs the instructor's hidden cases
(``gpudl_instructor.checks.lab09``, drawn from the grader's secret) when the notebook is graded,
through the same comparisons (``_compare_NAME``), so they teach alike. Where the expected values
come from:

- the kernel summary: on synthetic traces, the values stored at release (``expected("lab09")``);
  on a real ``torch.profiler`` trace of a small ResNet that the check records itself, the trace:
  a row's numbers are those of the events of its name, its share is of all the durations;
- the lecture's table (a question): only whether the answer is well-formed;
- the chain's bytes, the roofline's prediction, calibration, quantization, the batch choice: the store;
- BN folding: ``torch.nn.utils.fusion.fuse_conv_bn_weights``, and conv then BN in eval mode;
- the INT8 linear layer: exact integer arithmetic (``quantization.exact_matmul``);
- the tuner: the known speeds of a simulated device that ``_drive_tuner`` (``@student_side``)
  builds in the student's process (a virtual clock, slow first calls), running the student's
  ``tune`` on it and returning what happened (choices, runs) as plain data.

The course's tools that would do an exercise (torch's folding and quantization routines and the
course's wrappers of them, the chain's op model, the INT32 GEMM, the tuner class) are set aside
while the student's code runs.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from .. import profiling, quantization
from ..hardware import device as current_device
from . import (GradingError, assert_close, assert_equal, call_student, choice_letters, exercise, question, quiet,
               run_student, student_side)
from .expected import expected

LAB = "lab09"
KEYS = ("name", "instances", "total_ns", "avg_ns", "min_ns", "max_ns", "time_pct")


# --- 1. the kernel summary ---------------------------------------------------------------------

def _real_trace(channels: int, blocks: int, iterations: int, batch: int, size: int) -> list[dict[str, Any]]:
    """A torch.profiler trace of a small ResNet, recorded here (in the check's process)."""
    dev = current_device()
    model = profiling.small_resnet(channels, blocks).to(dev)
    x = torch.randn(batch, 3, size, size, device=dev)
    with quiet(), torch.no_grad():
        return profiling.profile_events(lambda: model(x), device=dev, iterations=iterations)


_NAMES = ("cudnn::bn_fw_inf_1C11_kernel_NCHW", "cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4",
          "vectorized_elementwise_kernel<launch_clamp_scalar>", "cudnn::ops::nchwToNhwcKernel",
          "vectorized_elementwise_kernel<AddFunctor<float>>")


def _synthetic_trace(g: np.random.Generator, kernels: int) -> list[dict[str, Any]]:
    """Events of ``kernels`` names with different counts and durations, and idle gaps between them."""
    names = list(_NAMES[:kernels])
    order = [str(g.choice(names)) for _ in range(int(g.integers(15, 40)))] + names
    g.shuffle(order)
    scale = {n: float(g.uniform(5e3, 1e5)) for n in names}
    t, out = int(g.integers(0, 1000)), []
    for n in order:
        d = int(scale[n] * g.uniform(0.3, 3.0))
        out.append({"name": n, "start_ns": t, "duration_ns": d, "range": "", "range_id": -1, "device": "cuda"})
        t += d + int(g.integers(2_000, 40_000))
    return out


def _wall(events: Sequence[Mapping[str, Any]]) -> float:
    return max(e["start_ns"] + e["duration_ns"] for e in events) - min(e["start_ns"] for e in events)


def _rows_of(got: Any, where: str) -> list[dict[str, Any]]:
    __tracebackhide__ = True
    if not isinstance(got, (list, tuple)):
        raise GradingError(f"{where}: return a list of rows (dicts), got {type(got).__name__}")
    rows = []
    for i, r in enumerate(got):
        if not isinstance(r, dict):
            raise GradingError(f"{where}: row {i} is a {type(r).__name__}; each row is a dict with keys {list(KEYS)}")
        missing = [k for k in KEYS if k not in r]
        if missing:
            raise GradingError(f"{where}: row {i} lacks {missing}; each row has the keys {list(KEYS)}")
        rows.append(r)
    return rows


def _compare_summary(got: Any, events: list[dict[str, Any]], top: int | None, full: Sequence[Any] | None,
                     where: str) -> None:
    """The student's rows against the full table ``full`` (``KernelRow``s of the reference, by
    decreasing total), row by row by name; with ``full`` None (a real trace, top=None) against the
    trace itself: each row's numbers are those of the events of its name. Kernels whose totals
    tie may come in either order (on a GPU two short kernels can take the same nanoseconds), and
    a top-k cut through a tie may keep either."""
    __tracebackhide__ = True
    rows = _rows_of(got, where)
    names = [str(r["name"]) for r in rows]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise GradingError(f"{where}: {dup!r} has more than one row: one row per kernel *name*, all its instances together")
    grand_n = len(events)
    grand_t = float(sum(e["duration_ns"] for e in events))
    if full is None:                  # the trace itself, for the names the rows give (all of them, or too few rows)
        present = {str(e["name"]) for e in events}
        full = sorted((profiling._row(n, [float(e["duration_ns"]) for e in events if str(e["name"]) == n], grand_t)
                       for n in names if n in present), key=lambda r: -r.total_ns)
        n_names = len(present)
    else:
        n_names = len(full)
    by_name = {r.name: r for r in full}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise GradingError(f"{where}: no kernel is called {unknown[0]!r}; the names are the events' 'name' values")
    want_len = n_names if top is None else min(top, n_names)
    if len(rows) != want_len:
        hint = (f": top={top} keeps the first {top} rows of the sorted table" if top is not None and len(rows) == n_names
                else ": one row per kernel name")
        raise GradingError(f"{where}: {len(rows)} rows, expected {want_len}{hint}")
    totals = [by_name[n].total_ns for n in names]
    if any(a < b for a, b in zip(totals, totals[1:])) or sorted(totals, reverse=True) != [r.total_ns for r in full[:want_len]]:
        raise GradingError(f"{where}: rows in the order {names[:4]}..., expected {[r.name for r in full[:4]]}...: sort by "
                           "decreasing total time (the hot spots first)")
    wall = _wall(events)
    for mine in rows:
        _compare_row(mine, by_name[str(mine["name"])], grand_n, grand_t, wall, where)


def _compare_row(mine: Mapping[str, Any], want: Any, grand_n: int, grand_t: float, wall: float, where: str) -> None:
    __tracebackhide__ = True
    label = f"{where}, kernel {want.name!r}"
    try:
        instances = mine["instances"]
        assert_equal(int(instances) if isinstance(instances, (int, np.integer, float)) else instances,
                     want.instances, name="instances")
        for key in ("total_ns", "min_ns", "max_ns"):
            assert_close(mine[key], getattr(want, key), name=key)
    except GradingError as exc:
        raise GradingError(f"{label}: {exc}") from None
    avg = float(mine["avg_ns"])
    if want.instances > 1 and math.isclose(avg, grand_t / grand_n, rel_tol=1e-9) and \
            not math.isclose(avg, want.avg_ns, rel_tol=1e-9):
        raise GradingError(f"{label}: avg_ns is {avg:g}, the average over *all* kernels; expected {want.avg_ns:g}, "
                           "the average of this kernel's own instances (its total / its instances)")
    try:
        assert_close(avg, want.avg_ns, name="avg_ns")
    except GradingError as exc:
        raise GradingError(f"{label}: {exc}: the average is this kernel's total over its instances") from None
    pct = float(mine["time_pct"])
    if math.isclose(pct, 100 * want.total_ns / wall, rel_tol=1e-6) and wall != grand_t:
        raise GradingError(f"{label}: time_pct is {pct:.4g}, the share of the trace's wall-clock span "
                           f"({wall:g} ns, idle gaps included); expected {want.time_pct:.4g}, the share of the "
                           f"kernels' time, the sum of all durations ({grand_t:g} ns)")
    try:
        assert_close(pct, want.time_pct, name="time_pct",
                     hints={0.01: "a factor of 1/100: time_pct is in percent (0-100), not a fraction"})
    except GradingError as exc:
        raise GradingError(f"{label}: {exc}: 100 x this kernel's total / the total of all kernels") from None


def _compare_kernel_summary(fn: Callable, cases: Sequence[tuple[list, int | None, str]], ref: Any) -> None:
    """Each case (events, top, label) against ``ref.kernel_summary(events)``, the full table; with
    ``ref`` None (a trace recorded now, in no store; top None) against the trace itself."""
    __tracebackhide__ = True
    for events, top, label in cases:
        full = None if ref is None else ref.kernel_summary(events)
        got = call_student(fn, events, top, forbid=_SUMMARY_FORBID, label="the kernel summary",
                           what=f"kernel_summary on {label}")
        _compare_summary(got, events, top, full, f"on {label}")


# The course's tables of a trace: nvtxkernsum is the same grouping per range.
_SUMMARY_FORBID = [profiling.range_summary, "gpudl.profiling._row"]


@exercise
def kernel_summary(fn: Callable) -> None:
    """``fn(events, top=None)`` -> rows (dicts with KEYS), by decreasing total time."""
    __tracebackhide__ = True
    g = np.random.default_rng(9)
    _compare_kernel_summary(fn, [(_synthetic_trace(g, 3), None, "three kernels with idle gaps between them"),
                                 (_synthetic_trace(g, 4), 2, "four kernels, top=2")], expected(LAB))
    _compare_kernel_summary(fn, [(_real_trace(8, 2, 2, 2, 12), None,
                                  "a torch.profiler trace of a small ResNet, 2 iterations (recorded by the check)")], None)


# --- 2. the lecture's table, a question ------------------------------------------------------------

@exercise
@question
def lecture_question(answer: Any) -> None:
    """Which of the lecture's five kernels disappear when BN is folded and the network stays NHWC
    (the letters of A-E; whether they are right is judged when the notebook is graded)."""
    __tracebackhide__ = True
    choice_letters(answer, "ABCDE")


# --- 3. bytes of the chain -----------------------------------------------------------------------------

def _as_pair(got: Any, where: str) -> tuple[float, float]:
    __tracebackhide__ = True
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise GradingError(f"{where}: return a pair (unfused_bytes, fused_bytes), got {got!r}")
    try:
        return float(got[0]), float(got[1])
    except (TypeError, ValueError):
        raise GradingError(f"{where}: return two numbers, got {got!r}") from None


def _compare_chain_bytes(fn: Callable, cases: Sequence[tuple[int, int, int, str]], ref: Any) -> None:
    __tracebackhide__ = True
    for rows, cols, size, label in cases:
        where = f"chain_bytes({rows}, {cols}, {size})" + (f" ({label})" if label else "")
        want = ref.chain_bytes(rows, cols, size)
        got = _as_pair(call_student(fn, rows, cols, size, forbid=["gpudl.fusion.chain_ops", "gpudl.fusion.fused_op"],
                                    label="the chain's bytes", what=where), where)
        for value, expected_b, which, per in ((got[0], want[0], "unfused", "x + bias reads x and bias and writes t; "
                                               "gelu reads t and writes u; + residual reads u and the residual and "
                                               "writes y"),
                                              (got[1], want[1], "fused", "the fused kernel reads x, bias and the "
                                               "residual once and writes y once; no intermediate touches DRAM")):
            if value != expected_b:
                raise GradingError(f"{where}: {which} bytes {value:g}, expected {expected_b:g}: {per} "
                                   f"(every tensor of rows x cols elements, the bias cols elements, {size} bytes each)")


@exercise
def chain_bytes(fn: Callable) -> None:
    """``fn(rows, cols, bytes_per_element)`` -> (unfused bytes, fused bytes)."""
    __tracebackhide__ = True
    _compare_chain_bytes(fn, [(8192, 8192, 2, "8192 x 8192 in FP16"), (3, 5, 4, "3 x 5 in FP32 (the bias matters here)")],
                         expected(LAB))


# --- 4. the roofline's prediction ------------------------------------------------------------------

def _compare_predicted_speedup(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    __tracebackhide__ = True
    for ops, fused, peak, bw, label in cases:
        where = "predicted_speedup" + (f" on {label}" if label else f"({len(ops)} ops)")
        want = ref.predicted_speedup(ops, fused, peak, bw)
        got = call_student(fn, ops, fused, peak, bw, label="the roofline's prediction", what=where)
        try:
            assert_close(got, want, name="predicted speed-up")
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}: each kernel takes max(flops / peak, bytes / bandwidth); the chain "
                               "takes the sum over its kernels, the fused kernel its own maximum") from None


@exercise
def predicted_speedup(fn: Callable) -> None:
    """``fn(ops, fused, peak, bandwidth)`` -> sum of the ops' roofline times / the fused kernel's."""
    __tracebackhide__ = True
    peak, bw = 989e12 / 2, 3.35e12
    n = 8192 * 8192
    chain = [(n, 4 * n), (8 * n, 4 * n), (n, 6 * n)]
    _compare_predicted_speedup(fn, [
        (chain, (10 * n, 6 * n), peak, bw, "the chain on an H100, FP16 (every kernel memory-bound)"),
        ([(2 * 4096 ** 3, 3 * 4096 ** 2 * 2), (4096 ** 2, 4 * 4096 ** 2)], (2 * 4096 ** 3 + 4096 ** 2, 3 * 4096 ** 2 * 2),
         989e12, bw, "a compute-bound GEMM and a bias-add fused into it (the GEMM's math still takes its time)")],
        expected(LAB))


# --- 5. folding BN into the convolution ---------------------------------------------------------

_FOLD_FORBID = ["torch.nn.utils.fusion.fuse_conv_bn_weights", "torch.nn.utils.fusion.fuse_conv_bn_eval",
                "torch.nn.utils.fusion.fuse_linear_bn_weights", "torch.nn.utils.fusion.fuse_linear_bn_eval",
                "gpudl.fusion.fold_conv_bn_module"]


def _bn_case(g: torch.Generator, k: int, c: int, r: int, bias: bool, eps: float, var_lo: float = 0.5) -> tuple:
    """(weight (k, c, r, r), bias or None, mean, var, gamma, beta, eps) in float64 from ``g``."""
    w = torch.randn(k, c, r, r, generator=g, dtype=torch.float64)
    b = torch.randn(k, generator=g, dtype=torch.float64) if bias else None
    stats = (torch.randn(k, generator=g, dtype=torch.float64),                      # mean
             torch.rand(k, generator=g, dtype=torch.float64) * 2 + var_lo,          # var
             torch.randn(k, generator=g, dtype=torch.float64),                      # gamma
             torch.randn(k, generator=g, dtype=torch.float64))                      # beta
    return w, b, *stats, eps


def _compare_fold_bn(fn: Callable, cases: Sequence[tuple[tuple, str]], g: torch.Generator) -> None:
    """Against torch's folding and against conv then BN on an input drawn from ``g``."""
    __tracebackhide__ = True
    for args, label in cases:
        w, b, mean, var, gamma, beta, eps = args
        where = f"fold_bn on {label}" if label else f"fold_bn (weight {tuple(w.shape)}, bias {'None' if b is None else 'given'})"
        want_w, want_b = torch.nn.utils.fusion.fuse_conv_bn_weights(w, b, mean, var, eps, gamma, beta)
        got = call_student(fn, w, b, mean, var, gamma, beta, eps, forbid=_FOLD_FORBID, label="BN folding", what=where)
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise GradingError(f"{where}: return a pair (weight, bias), got {type(got).__name__}")
        try:
            assert_close(got[0], want_w.detach(), name="folded weight", dtype="fp64")
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}\nscale each output channel k by gamma_k / sqrt(var_k + eps): the "
                               "standard deviation with eps, not the variance; along the output channels (axis 0 of "
                               "the weight)") from None
        try:
            assert_close(got[1], want_b.detach(), name="folded bias", dtype="fp64")
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}\nthe folded bias is (b - mean) * scale + beta, with b = 0 when the "
                               "convolution has no bias") from None
        x = torch.randn(2, w.shape[1], 6, 5, generator=g, dtype=torch.float64)
        bn = (torch.nn.functional.conv2d(x, w, b) - mean[:, None, None]) / torch.sqrt(var[:, None, None] + eps)
        assert_close(torch.nn.functional.conv2d(x, torch.as_tensor(got[0]), torch.as_tensor(got[1])),
                     bn * gamma[:, None, None] + beta[:, None, None], dtype="fp64", k=w[0].numel(),
                     name="folded convolution's output (against conv then BN in eval mode)")


@exercise
def fold_bn(fn: Callable) -> None:
    """``fn(weight, bias, mean, var, gamma, beta, eps)`` -> (weight', bias') of the folded convolution."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(21)
    cases = [(_bn_case(g, 6, 4, 3, True, 1e-5), "a 3x3 convolution with bias, 6 filters over 4 channels"),
             (_bn_case(g, 5, 3, 1, False, 1e-5), "a convolution without bias (bias=None)"),
             (_bn_case(g, 4, 2, 3, True, 0.5, var_lo=0.01), "eps = 0.5 and variances near 0 (eps matters)")]
    _compare_fold_bn(fn, cases, g)


# --- 6-9. INT8 ---------------------------------------------------------------------------------------

_CALIBRATE_FORBID = ["torch.amax", "torch.quantile", "gpudl.quantization.torch_amax"]


def _compare_calibrate(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    __tracebackhide__ = True
    for x, method, pct, label in cases:
        where = f"calibrate(x, {method!r}, {pct})" + (f" on {label}" if label else "")
        want = ref.calibrate_max(x) if method == "max" else ref.calibrate_percentile(x, pct)
        got = call_student(fn, x, method, pct, forbid=_CALIBRATE_FORBID, label="calibration", what=where)
        try:
            assert_close(got, want, name="amax")
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}: amax is about magnitudes, |x| (a symmetric range covers "
                               "-amax..amax); the percentile is in percent (np.percentile(|x|, 99.99))") from None


@exercise
def calibrate(fn: Callable) -> None:
    """``fn(x, method="max", percentile=99.99)`` -> amax (a float)."""
    __tracebackhide__ = True
    g = np.random.default_rng(3)
    x = np.concatenate([g.standard_normal(2_000), [80.0, -120.0]])
    _compare_calibrate(fn, [(x, "max", 99.99, "data whose largest magnitude is negative (-120)"),
                            (x, "percentile", 99.9, "the same data, 99.9th percentile of the magnitudes"),
                            (-np.abs(g.standard_normal((50, 40))), "percentile", 99.0, "negative data, 99th percentile")],
                       expected(LAB))


def _as_q(got: Any, where: str, shape: tuple[int, ...]) -> tuple[np.ndarray, Any]:
    __tracebackhide__ = True
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise GradingError(f"{where}: return a pair (q, scale), got {type(got).__name__}")
    q = np.asarray(got[0].detach().cpu() if hasattr(got[0], "detach") else got[0])
    if q.shape != shape:
        raise GradingError(f"{where}: q has shape {q.shape}, expected {shape}")
    if q.dtype != np.int8:
        raise GradingError(f"{where}: q has dtype {q.dtype}, expected int8 (.astype(np.int8) after clipping)")
    return q, got[1]


def _compare_q(q: np.ndarray, want: np.ndarray, x: np.ndarray, scale: Any, where: str) -> None:
    """Exact, except at exact ties (x / scale = k + 1/2), where either neighbour is a correct rounding."""
    __tracebackhide__ = True
    ratio = x / scale
    tie = np.isclose(np.abs(ratio - np.trunc(ratio)), 0.5, rtol=0, atol=1e-9) & (np.abs(ratio) < 127)
    bad = (q.astype(int) != want.astype(int)) & ~(tie & (np.abs(q.astype(int) - want.astype(int)) == 1))
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        got_v, want_v, r = int(q[i]), int(want[i]), float(ratio[i])
        hint = ("values beyond amax are clamped to +-127 (a cast to int8 without clipping wraps around; -128 is not "
                "used)" if abs(r) > 127 else "round to the nearest integer (np.rint): floor or truncation is biased")
        raise GradingError(f"{where}: {int(bad.sum())} of {q.size} values differ; at index {i}, x / scale = {r:.4g}: "
                           f"got {got_v}, expected {want_v}: {hint}")


_QUANTIZE_FORBID = ["torch.fake_quantize_per_tensor_affine", "torch.fake_quantize_per_channel_affine",
                    "torch.quantize_per_tensor", "torch.quantize_per_channel", "gpudl.quantization.torch_quantize",
                    "torch._fake_quantize_learnable_per_tensor_affine",
                    "torch._fake_quantize_learnable_per_channel_affine",
                    "torch.ao.quantization.fx._decomposed.quantize_per_tensor",
                    "torch.ao.quantization.fx._decomposed.quantize_per_channel"]


def _compare_quantize_per_tensor(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    __tracebackhide__ = True
    for x, amax, label in cases:
        where = f"quantize_per_tensor(x, {amax:.4g})" + (f" on {label}" if label else "")
        scale = amax / 127
        want = ref.quantize(x, scale)
        got = call_student(fn, x, amax, forbid=_QUANTIZE_FORBID, label="per-tensor quantization", what=where)
        q, s = _as_q(got, where, x.shape)
        try:
            assert_close(s, scale, name="scale", hints={127 / 128: "a factor of 127/128: the scale is amax / 127 "
                                                                   "(the symmetric range -127..127), not amax / 128"})
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}") from None
        _compare_q(q, want, x, scale, where)


@exercise
def quantize_per_tensor(fn: Callable) -> None:
    """``fn(x, amax)`` -> (q int8, scale) with scale = amax / 127."""
    __tracebackhide__ = True
    g = np.random.default_rng(4)
    x = g.standard_normal((6, 8)) * 2
    _compare_quantize_per_tensor(fn, [(x, float(np.abs(x).max()), "a 6x8 array, amax = max |x|"),
                                      (np.array([-3.0, -1.2, 0.0, 0.6, 1.9, 3.0]), 3.0, "values from -amax to amax"),
                                      (x, 1.5, "amax = 1.5 from a percentile: values beyond it are clipped")],
                                 expected(LAB))


def _compare_quantize_per_channel(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    __tracebackhide__ = True
    for w, axis, label in cases:
        where = f"quantize_per_channel(w {w.shape}, axis={axis})" + (f" on {label}" if label else "")
        q_want, s_want = ref.quantize_per_channel(w, axis)
        got = call_student(fn, w, axis, forbid=_QUANTIZE_FORBID + _CALIBRATE_FORBID, label="per-channel quantization",
                           what=where)
        q, s = _as_q(got, where, w.shape)
        s = np.asarray(s.detach().cpu() if hasattr(s, "detach") else s, dtype=float).reshape(-1)
        if s.shape != s_want.shape:
            other = [w.shape[a] for a in range(w.ndim) if a != axis]
            raise GradingError(f"{where}: {s.size} scales, expected {s_want.size}, one per index of axis {axis}"
                               + (": the max is over every *other* axis" if s.size in other or s.size == 1 else ""))
        try:
            assert_close(s, s_want, name="scales")
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}\neach channel's scale is the max |w| over that channel (all other "
                               "axes) / 127") from None
        _compare_q(q, q_want, w, quantization._per_channel(s_want, w.ndim, axis), where)


@exercise
def quantize_per_channel(fn: Callable) -> None:
    """``fn(w, axis=0)`` -> (q int8 like w, scales (w.shape[axis],)), calibrated by max per channel."""
    __tracebackhide__ = True
    g = np.random.default_rng(5)
    w = g.standard_normal((4, 6))
    w[2] *= 50                                                              # an outlier channel
    _compare_quantize_per_channel(fn, [(w, 0, "a (4, 6) weight with an outlier row, axis=0"),
                                       (g.standard_normal((5, 3, 3, 3)), 0, "a (5, 3, 3, 3) convolution weight, axis=0"),
                                       (g.standard_normal((3, 7)), 1, "a (3, 7) array, axis=1")], expected(LAB))


def _int8_case(g: np.random.Generator, m: int, k: int, n: int, extreme: bool, bias: bool) -> tuple:
    """(q_x (m, k), s_x, q_w (n, k), s_w (n,), bias (n,) or None) from ``g``; ``extreme``: values near
    +-127 with matching signs, so the sums go far beyond int8 and int16."""
    if extreme:
        q_x = (g.choice([-1, 1], size=(m, k)) * g.integers(120, 128, size=(m, k))).astype(np.int8)
        q_w = (np.sign(q_x[:1]).repeat(n, 0) * g.integers(120, 128, size=(n, k))).astype(np.int8)
    else:
        q_x = g.integers(-127, 128, size=(m, k)).astype(np.int8)
        q_w = g.integers(-127, 128, size=(n, k)).astype(np.int8)
    s_x, s_w = float(g.uniform(0.001, 0.1)), g.uniform(0.001, 0.1, size=n)
    return q_x, s_x, q_w, s_w, (g.standard_normal(n) if bias else None)


# The course's Triton INT8 GEMM computes the whole layer in its epilogue: refused like int8_matmul
# (by qualified name, so that importing these checks does not import Triton).
INT8_KERNEL = "gpudl.gemm.int8:int8_matmul_triton"


def _compare_int8_linear(fn: Callable, cases: Sequence[tuple[tuple, str]]) -> None:
    """Against exact integer arithmetic (Python integers), then the scales and the bias."""
    __tracebackhide__ = True
    for (q_x, s_x, q_w, s_w, bias), label in cases:
        (m, k), n = q_x.shape, q_w.shape[0]
        where = "int8_linear" + (f" on {label}" if label else f" (M={m}, K={k}, N={n})")
        acc = np.array(quantization.exact_matmul(q_x, q_w.T), dtype=np.float64)           # exact integers
        want = acc * s_x * s_w[None, :] + (0.0 if bias is None else bias[None, :])
        got = call_student(fn, q_x, s_x, q_w, s_w, bias,
                           forbid=[quantization.int8_matmul, INT8_KERNEL, "torch._int_mm"],
                           label="the INT8 linear layer", what=where)
        got_a = np.asarray(got.detach().cpu() if hasattr(got, "detach") else got)
        if got_a.shape != (m, n):
            raise GradingError(f"{where}: result of shape {got_a.shape}, expected ({m}, {n}) = (M, N): y = x W^T, and "
                               "s_w has one scale per output channel, a column of y")
        try:
            assert_close(got_a, want, dtype="fp32", name="output")
        except GradingError as exc:
            overflow = np.abs(acc).max() > 127
            raise GradingError(f"{where}: {exc}\n" + (
                "sum the products exactly, in int32 (q.astype(np.int32)): int8 or int16 sums of "
                f"{k} products of up to 127 x 127 wrap around, float16 sums round; " if overflow else "") +
                "then multiply by s_x and by s_w[n] for output column n, and add the bias") from None


@exercise
def int8_linear(fn: Callable) -> None:
    """``fn(q_x, s_x, q_w, s_w, bias)`` -> float (M, N), summed in INT32."""
    __tracebackhide__ = True
    g = np.random.default_rng(6)
    _compare_int8_linear(fn, [(_int8_case(g, 3, 16, 5, False, True), "M=3, K=16, N=5"),
                              (_int8_case(g, 4, 256, 6, True, True),
                               "K=256 with values near +-127: sums far beyond int8 (and int16)"),
                              (_int8_case(g, 2, 8, 3, False, False), "bias=None")])


# --- 10. the tuner -------------------------------------------------------------------------------------

class _SimDevice:
    """A virtual clock and candidates whose first ``cold`` calls per key are slow; a candidate's
    optional third time is an interruption added to its second call after the cold ones (one
    slow run among the timed ones, which pulls a mean up and leaves the median where it was)."""

    def __init__(self, cold: int):
        self.now, self.cold = 0.0, cold
        self.key: Any = None
        self.times: dict[str, tuple[float, float]] = {}
        self.calls: dict[tuple[Any, str], int] = {}
        self.step_runs: dict[str, int] = {}
        self.clock_reads = 0

    def run(self, name: Any) -> None:
        name = str(name)
        if name not in self.times:
            raise ValueError(f"run({name!r}): not one of the candidates {sorted(self.times)}")
        steady, cold, *interrupted = self.times[name]
        n = self.calls.get((self.key, name), 0)
        self.calls[(self.key, name)] = n + 1
        self.step_runs[name] = self.step_runs.get(name, 0) + 1
        self.now += cold if n < self.cold else steady
        if interrupted and n == self.cold + 1:
            self.now += interrupted[0]

    def clock(self) -> float:
        self.clock_reads += 1
        return self.now


@student_side
def _drive_tuner(student_tune: Callable, plan: list, warmup: int, repeats: int) -> list[dict[str, Any]]:
    """Run the student's ``tune`` on a simulated device, step by step of ``plan`` (key, {name:
    (steady s, cold s)}), with one cache; report each call's choice and runs."""
    dev, cache, out = _SimDevice(cold=warmup), {}, []
    for key, times in plan:
        key = tuple(key) if isinstance(key, list) else key
        dev.key, dev.times, dev.step_runs, dev.clock_reads = key, {n: tuple(t) for n, t in times.items()}, {}, 0
        best = student_tune(key, list(times), dev.run, dev.clock, cache, warmup=warmup, repeats=repeats)
        out.append({"best": best if isinstance(best, (str, type(None))) else repr(best), "runs": dict(dev.step_runs),
                    "clock_reads": dev.clock_reads})
    return out


def _compare_tune(fn: Callable, plans: Sequence[tuple[list, str]], warmup: int = 2, repeats: int = 3) -> None:
    """Each plan's steps (key, {candidate: (steady s, cold s)}) on the simulated device: the
    expected winner is the candidate fastest when warm."""
    __tracebackhide__ = True
    for steps, label in plans:
        got = run_student(_drive_tuner, fn, [list(s) for s in steps], warmup, repeats, forbid=["gpudl.tuning.Tuner.tune"],
                          label="the tuner", what=f"tune on {label}")
        if not isinstance(got, list) or len(got) != len(steps):
            raise GradingError(f"tune on {label}: the simulated device did not get an answer for every call")
        seen: dict[str, str] = {}
        for i, ((key, times), rec) in enumerate(zip(steps, got)):
            best = min(times, key=lambda n: times[n][0])
            where = f"tune on {label}, call {i + 1} (key {key})"
            ran = sum(rec["runs"].values())
            if key in seen:
                if ran:
                    raise GradingError(f"{where}: this key was tuned before, yet the candidates ran {ran} times: "
                                       "look the key up in the cache first and return the remembered winner")
                if rec["best"] != seen[key]:
                    raise GradingError(f"{where}: returned {rec['best']!r}, but this key's winner was {seen[key]!r}: "
                                       "cache[key] holds each key's own winner")
                continue
            if ran == 0:
                raise GradingError(f"{where}: nothing ran for a key never seen before: a different key (another shape) "
                                   "needs its own tuning; the cache is per key")
            short = [n for n in times if rec["runs"].get(n, 0) < warmup + repeats]
            if rec["best"] != best:
                first = next(iter(times))
                by_mean = min(times, key=lambda n: times[n][0] + (times[n][2] / repeats if len(times[n]) > 2 else 0.0))
                if not short and by_mean != best and rec["best"] == by_mean:
                    hint = (f"one of {best!r}'s timed runs was interrupted (it took far longer than the others): its "
                            "mean is pulled up, its median is not. Keep the median of the `repeats` times")
                elif short:
                    hint = (f"{short} ran fewer than warmup + repeats = {warmup + repeats} times: the first calls are "
                            "slow (compiling, cold caches); run each candidate `warmup` times untimed before timing")
                elif rec["best"] == first:
                    hint = (f"{first!r} is the first candidate: does your comparison ever replace the first choice? "
                            "(start from an infinite best time)")
                else:
                    hint = ("time each run between two calls of `clock` (the device's clock, not time.time), take "
                            "the median of the `repeats` times, and keep the smallest")
                raise GradingError(f"{where}: chose {rec['best']!r}, expected {best!r}: {hint}")
            if rec["clock_reads"] == 0:
                raise GradingError(f"{where}: the device's `clock` was never read: time the runs with it")
            seen[key] = best


@exercise
def tune(fn: Callable) -> None:
    """``fn(key, candidates, run, clock, cache, warmup=2, repeats=3)`` -> the chosen candidate."""
    __tracebackhide__ = True
    a = ("(4096, 4096, 4096)", {"64x64": (3e-3, 3e-3), "128x128": (1e-3, 40e-3), "128x256": (2e-3, 30e-3)})
    b = ("(64, 64, 64)", {"64x64": (2e-5, 1e-3), "128x128": (5e-5, 40e-3), "128x256": (8e-5, 30e-3)})
    c = ("(1024, 1024, 1024)", {"64x64": (3e-3, 3e-3), "128x256": (2e-3, 30e-3), "128x128": (1e-3, 40e-3, 20e-3)})
    _compare_tune(fn, [([a], "one shape: 128x128 is fastest once warm, slowest while compiling"),
                       ([a, b, a, b], "two shapes, each asked twice (the second time comes from the cache)"),
                       ([c], "one of 128x128's timed runs is interrupted (20 ms more)")])


# --- 11. a batch size under a latency budget ------------------------------------------------------------

def _compare_largest_batch(fn: Callable, cases: Sequence[tuple], ref: Any) -> None:
    __tracebackhide__ = True
    for batches, lat, budget, label in cases:
        where = f"largest_batch with budget {budget * 1e3:.1f} ms" + (f" ({label})" if label else "")
        want = ref.largest_batch_within(batches, lat, budget)
        per_frame = ref.largest_batch_within(batches, [t / b for b, t in zip(batches, lat)], budget)   # the mistake
        got = call_student(fn, batches, lat, budget, label="the batch choice", what=where)
        if isinstance(got, (np.integer, float)) and float(got).is_integer():
            got = int(got)
        if got == want:
            continue
        if got == per_frame:
            hint = ("that batch's *latency* exceeds the budget: you compared latency / batch (one frame's share of "
                    "the time, 1 / throughput); every frame of a batch waits for the whole batch")
        elif isinstance(got, int) and 0 <= got < len(batches) and got not in batches:
            hint = "return the batch size itself, not its index"
        else:
            hint = "keep every batch whose measured latency is <= the budget and return the largest (None if none)"
        raise GradingError(f"{where}: got {got!r}, expected {want!r}: {hint}")


@exercise
def largest_batch(fn: Callable) -> None:
    """``fn(batches, latencies_s, budget_s)`` -> the largest batch whose latency <= budget, or None."""
    __tracebackhide__ = True
    _compare_largest_batch(fn, [
        ([1, 2, 4, 8, 16, 32], [0.004, 0.006, 0.011, 0.019, 0.036, 0.070], 1 / 30, "the 30 FPS budget of 33 ms"),
        ([16, 1, 8, 4, 2], [0.036, 0.004, 0.019, 0.011, 0.006], 0.02, "batch sizes in no particular order"),
        ([1, 2, 4, 8], [0.012, 0.009, 0.030, 0.025], 0.026, "noisy measurements: latency not monotone"),
        ([4, 8], [0.05, 0.09], 1 / 30, "no batch fits (answer None)")], expected(LAB))
