"""Checks for lab09_profiling_and_inference.

Each check takes the student's function and ``hidden=False`` (the cases of the released
notebook) or ``hidden=True`` (cases drawn from the instructor's secret seed). The answers come
from ``gpudl.profiling``, ``gpudl.fusion``, ``gpudl.quantization`` and ``gpudl.tuning``, which
the student's code may not call while it is checked.

Everything crosses the grading boundary as plain data:

- the kernel summary is graded on a *real* ``torch.profiler`` trace that the check records in
  its own process (a small ResNet, sized from the seed when hidden) and hands to the student's
  function as a list of dicts, the same events ``gpudl.profiling.profile_events`` gives in the
  notebook; the reference summarises the very same list;
- the tuner needs a device to time candidates on: ``_drive_tuner`` (``@student_side``) builds a
  simulated one in the student's process (a virtual clock; each candidate's first calls are
  slow, as compiling and cold caches make them) from the plan the check draws, runs the
  student's ``tune`` on it with a cache, and returns what happened (the choices, how often each
  candidate ran) as plain data.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from .. import fusion, profiling, quantization, tuning
from ..hardware import device as current_device
from . import (GradingError, assert_close, assert_equal, call_student, check_choice, exercise, quiet, rng,
               run_student, student_side)

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


def _compare_summary(got: Any, events: list[dict[str, Any]], top: int | None, where: str) -> None:
    """The student's rows against ``profiling.kernel_summary(events)``, row by row by name. Kernels
    whose totals tie may come in either order (on a GPU two short kernels can take the same
    nanoseconds), and a top-k cut through a tie may keep either."""
    __tracebackhide__ = True
    rows = _rows_of(got, where)
    full = profiling.kernel_summary(events)
    by_name = {r.name: r for r in full}
    want_len = len(full) if top is None else min(top, len(full))
    names = [str(r["name"]) for r in rows]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise GradingError(f"{where}: {dup!r} has more than one row: one row per kernel *name*, all its instances together")
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise GradingError(f"{where}: no kernel is called {unknown[0]!r}; the names are the events' 'name' values")
    if len(rows) != want_len:
        hint = (f": top={top} keeps the first {top} rows of the sorted table" if top is not None and len(rows) == len(full)
                else ": one row per kernel name")
        raise GradingError(f"{where}: {len(rows)} rows, expected {want_len}{hint}")
    totals = [by_name[n].total_ns for n in names]
    if any(a < b for a, b in zip(totals, totals[1:])) or sorted(totals, reverse=True) != [r.total_ns for r in full[:want_len]]:
        raise GradingError(f"{where}: rows in the order {names[:4]}..., expected {[r.name for r in full[:4]]}...: sort by "
                           "decreasing total time (the hot spots first)")
    grand_n = len(events)
    grand_t = float(sum(e["duration_ns"] for e in events))
    wall = _wall(events)
    for mine in rows:
        want = by_name[str(mine["name"])]
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


@exercise
def kernel_summary(fn: Callable, hidden: bool = False) -> None:
    """``fn(events, top=None)`` -> rows (dicts with KEYS), by decreasing total time."""
    __tracebackhide__ = True
    if not hidden:
        g = np.random.default_rng(9)
        real = _real_trace(8, 2, 2, 2, 12)
        cases = [(_synthetic_trace(g, 3), None, "three kernels with idle gaps between them"),
                 (real, None, "a torch.profiler trace of a small ResNet, 2 iterations (recorded by the check)"),
                 (real, 2, "the same trace with top=2")]
    else:
        g = rng(f"{LAB}.kernel_summary")
        real = _real_trace(int(g.choice([4, 8, 12])), int(g.integers(1, 4)), int(g.integers(1, 4)),
                           int(g.integers(1, 4)), int(g.choice([8, 12, 16])))
        cases = [(_synthetic_trace(g, int(g.integers(2, 6))), None, "a synthetic trace"),
                 (real, None, "a torch.profiler trace recorded by the check"),
                 (real, int(g.integers(1, 4)), "the same trace with top=k"),
                 (_synthetic_trace(g, 5), 1, "a synthetic trace with top=1")]
    for events, top, label in cases:
        got = call_student(fn, events, top, forbid=[profiling.kernel_summary, profiling.range_summary],
                           label="the kernel summary", what=f"kernel_summary on {label}")
        _compare_summary(got, events, top, f"on {label}")


# --- 2. the lecture's table, a question ------------------------------------------------------------

_FOLDED = "279ee059ffea074b7fc7515de2767619"


@exercise
def lecture_question(answer: Any) -> None:
    """Which of the lecture's five kernels disappear when BN is folded and the network stays NHWC."""
    __tracebackhide__ = True
    check_choice(LAB, answer, "ABCDE", _FOLDED,
                 "folding moves the BN's arithmetic into the convolution's weights; keeping the network in NHWC "
                 "removes the conversions. Which kernels are those two? (ReLU and add need a different fusion: "
                 "into the convolution's epilogue)", question="lecture")


# --- 3. bytes of the chain -----------------------------------------------------------------------------

def _as_pair(got: Any, where: str) -> tuple[float, float]:
    __tracebackhide__ = True
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise GradingError(f"{where}: return a pair (unfused_bytes, fused_bytes), got {got!r}")
    try:
        return float(got[0]), float(got[1])
    except (TypeError, ValueError):
        raise GradingError(f"{where}: return two numbers, got {got!r}") from None


@exercise
def chain_bytes(fn: Callable, hidden: bool = False) -> None:
    """``fn(rows, cols, bytes_per_element)`` -> (unfused bytes, fused bytes)."""
    __tracebackhide__ = True
    if not hidden:
        cases = [(8192, 8192, 2, "8192 x 8192 in FP16"), (3, 5, 4, "3 x 5 in FP32 (the bias matters here)")]
    else:
        g = rng(f"{LAB}.chain_bytes")
        cases = [(int(g.integers(1, 5000)), int(g.integers(1, 5000)), int(g.choice([1, 2, 4, 8])), "") for _ in range(6)]
        cases.append((1, 1, 2, "a 1 x 1 tensor"))
    for rows, cols, size, label in cases:
        where = f"chain_bytes({rows}, {cols}, {size})" + (f" ({label})" if label else "")
        want = fusion.chain_bytes(rows, cols, size)
        got = _as_pair(call_student(fn, rows, cols, size, forbid=[fusion.chain_bytes], label="the chain's bytes",
                                    what=where), where)
        for value, expected, which, per in ((got[0], want[0], "unfused", "x + bias reads x and bias and writes t; "
                                             "gelu reads t and writes u; + residual reads u and the residual and "
                                             "writes y"),
                                            (got[1], want[1], "fused", "the fused kernel reads x, bias and the "
                                             "residual once and writes y once; no intermediate touches DRAM")):
            if value != expected:
                raise GradingError(f"{where}: {which} bytes {value:g}, expected {expected:g}: {per} "
                                   f"(every tensor of rows x cols elements, the bias cols elements, {size} bytes each)")


# --- 4. the roofline's prediction ------------------------------------------------------------------

@exercise
def predicted_speedup(fn: Callable, hidden: bool = False) -> None:
    """``fn(ops, fused, peak, bandwidth)`` -> sum of the ops' roofline times / the fused kernel's."""
    __tracebackhide__ = True
    if not hidden:
        peak, bw = 989e12 / 2, 3.35e12
        n = 8192 * 8192
        chain = [(n, 4 * n), (8 * n, 4 * n), (n, 6 * n)]
        cases = [(chain, (10 * n, 6 * n), peak, bw, "the chain on an H100, FP16 (every kernel memory-bound)"),
                 ([(2 * 4096 ** 3, 3 * 4096 ** 2 * 2), (4096 ** 2, 4 * 4096 ** 2)],
                  (2 * 4096 ** 3 + 4096 ** 2, 3 * 4096 ** 2 * 2), 989e12, bw,
                  "a compute-bound GEMM and a bias-add fused into it (the GEMM's math still takes its time)")]
    else:
        g = rng(f"{LAB}.predicted_speedup")
        cases = []
        for _ in range(6):
            ops = [(float(g.uniform(1e6, 1e12)), float(g.uniform(1e6, 1e10))) for _ in range(int(g.integers(1, 5)))]
            fused = (sum(f for f, _ in ops), float(g.uniform(0.2, 1.0)) * min(b for _, b in ops))
            cases.append((ops, fused, float(g.uniform(1e13, 1e15)), float(g.uniform(5e11, 5e12)), ""))
    for ops, fused, peak, bw, label in cases:
        where = "predicted_speedup" + (f" on {label}" if label else f"({len(ops)} ops)")
        want = fusion.predicted_speedup(ops, fused, peak, bw)
        got = call_student(fn, ops, fused, peak, bw, forbid=[fusion.predicted_speedup, fusion.roofline_time],
                           label="the roofline's prediction", what=where)
        try:
            assert_close(got, want, name="predicted speed-up")
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}: each kernel takes max(flops / peak, bytes / bandwidth); the chain "
                               "takes the sum over its kernels, the fused kernel its own maximum") from None


# --- 5. folding BN into the convolution ---------------------------------------------------------

_FOLD_FORBID = [fusion.fold_conv_bn, "torch.nn.utils.fusion.fuse_conv_bn_weights",
                "torch.nn.utils.fusion.fuse_conv_bn_eval"]


@exercise
def fold_bn(fn: Callable, hidden: bool = False) -> None:
    """``fn(weight, bias, mean, var, gamma, beta, eps)`` -> (weight', bias') of the folded convolution."""
    __tracebackhide__ = True
    g = torch.Generator().manual_seed(21)
    if hidden:
        g.manual_seed(int(rng(f"{LAB}.fold_bn").integers(2 ** 31)))

    def case(k, c, r, bias, eps, var_lo=0.5):
        w = torch.randn(k, c, r, r, generator=g, dtype=torch.float64)
        b = torch.randn(k, generator=g, dtype=torch.float64) if bias else None
        stats = (torch.randn(k, generator=g, dtype=torch.float64),                      # mean
                 torch.rand(k, generator=g, dtype=torch.float64) * 2 + var_lo,          # var
                 torch.randn(k, generator=g, dtype=torch.float64),                      # gamma
                 torch.randn(k, generator=g, dtype=torch.float64))                      # beta
        return w, b, *stats, eps

    if not hidden:
        cases = [(case(6, 4, 3, True, 1e-5), "a 3x3 convolution with bias, 6 filters over 4 channels"),
                 (case(5, 3, 1, False, 1e-5), "a convolution without bias (bias=None)"),
                 (case(4, 2, 3, True, 0.5, var_lo=0.01), "eps = 0.5 and variances near 0 (eps matters)")]
    else:
        gg = rng(f"{LAB}.fold_bn.shapes")
        cases = [(case(int(gg.integers(1, 9)), int(gg.integers(1, 9)), int(gg.choice([1, 3, 5])), bool(gg.random() < 0.6),
                       float(gg.choice([1e-5, 1e-3, 0.1])), var_lo=float(gg.choice([0.001, 0.5]))), "") for _ in range(6)]
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


# --- 6-9. INT8 ---------------------------------------------------------------------------------------

def _heavy(g: np.random.Generator, shape: tuple[int, ...], outliers: int = 2) -> np.ndarray:
    x = g.standard_normal(shape)
    flat = x.reshape(-1)
    idx = g.choice(flat.size, size=min(outliers, flat.size), replace=False)
    flat[idx] = g.choice([-1.0, 1.0], size=idx.size) * g.uniform(20, 60, size=idx.size)
    return x


@exercise
def calibrate(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, method="max", percentile=99.99)`` -> amax (a float)."""
    __tracebackhide__ = True
    if not hidden:
        g = np.random.default_rng(3)
        x = np.concatenate([g.standard_normal(20_000), [80.0, -120.0]])
        cases = [(x, "max", 99.99, "data whose largest magnitude is negative (-120)"),
                 (x, "percentile", 99.9, "the same data, 99.9th percentile of the magnitudes"),
                 (-np.abs(g.standard_normal((50, 40))), "percentile", 99.0, "negative data, 99th percentile")]
    else:
        g = rng(f"{LAB}.calibrate")
        cases = []
        for _ in range(4):
            x = _heavy(g, (int(g.integers(10, 200)), int(g.integers(1, 50))), int(g.integers(1, 5)))
            cases.append((x, str(g.choice(["max", "percentile"])), float(g.choice([99.0, 99.9, 99.99, 95.0])), ""))
    for x, method, pct, label in cases:
        where = f"calibrate(x, {method!r}, {pct})" + (f" on {label}" if label else "")
        want = quantization.calibrate_max(x) if method == "max" else quantization.calibrate_percentile(x, pct)
        got = call_student(fn, x, method, pct, forbid=[quantization.calibrate_max, quantization.calibrate_percentile],
                           label="calibration", what=where)
        try:
            assert_close(got, want, name="amax")
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}: amax is about magnitudes, |x| (a symmetric range covers "
                               "-amax..amax); the percentile is in percent (np.percentile(|x|, 99.99))") from None


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


@exercise
def quantize_per_tensor(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, amax)`` -> (q int8, scale) with scale = amax / 127."""
    __tracebackhide__ = True
    if not hidden:
        g = np.random.default_rng(4)
        x = g.standard_normal((6, 8)) * 2
        cases = [(x, float(np.abs(x).max()), "a 6x8 array, amax = max |x|"),
                 (np.array([-3.0, -1.2, 0.0, 0.6, 1.9, 3.0]), 3.0, "values from -amax to amax"),
                 (x, 1.5, "amax = 1.5 from a percentile: values beyond it are clipped")]
    else:
        g = rng(f"{LAB}.quantize_per_tensor")
        cases = []
        for _ in range(4):
            x = _heavy(g, (int(g.integers(1, 30)), int(g.integers(1, 30))), 1)
            cases.append((x, float(np.abs(x).max() * g.choice([1.0, 0.1, 0.5])), ""))
    for x, amax, label in cases:
        where = f"quantize_per_tensor(x, {amax:.4g})" + (f" on {label}" if label else "")
        scale = amax / 127
        want = quantization.quantize(x, scale)
        got = call_student(fn, x, amax, forbid=[quantization.quantize, quantization.quantize_per_tensor,
                                                quantization.symmetric_scale], label="per-tensor quantization",
                           what=where)
        q, s = _as_q(got, where, x.shape)
        try:
            assert_close(s, scale, name="scale", hints={127 / 128: "a factor of 127/128: the scale is amax / 127 "
                                                                   "(the symmetric range -127..127), not amax / 128"})
        except GradingError as exc:
            raise GradingError(f"{where}: {exc}") from None
        _compare_q(q, want, x, scale, where)


@exercise
def quantize_per_channel(fn: Callable, hidden: bool = False) -> None:
    """``fn(w, axis=0)`` -> (q int8 like w, scales (w.shape[axis],)), calibrated by max per channel."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.quantize_per_channel") if hidden else np.random.default_rng(5)
    if not hidden:
        w = g.standard_normal((4, 6))
        w[2] *= 50                                                              # an outlier channel
        cases = [(w, 0, "a (4, 6) weight with an outlier row, axis=0"),
                 (g.standard_normal((5, 3, 3, 3)), 0, "a (5, 3, 3, 3) convolution weight, axis=0"),
                 (g.standard_normal((3, 7)), 1, "a (3, 7) array, axis=1")]
    else:
        cases = []
        for _ in range(4):
            shape = tuple(int(d) for d in g.integers(1, 7, size=int(g.integers(2, 5))))
            cases.append((_heavy(g, shape, 1), int(g.integers(0, len(shape))), ""))
    for w, axis, label in cases:
        where = f"quantize_per_channel(w {w.shape}, axis={axis})" + (f" on {label}" if label else "")
        q_want, s_want = quantization.quantize_per_channel(w, axis)
        got = call_student(fn, w, axis, forbid=[quantization.quantize, quantization.quantize_per_channel,
                                                quantization.calibrate_max], label="per-channel quantization",
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
def int8_linear(fn: Callable, hidden: bool = False) -> None:
    """``fn(q_x, s_x, q_w, s_w, bias)`` -> float (M, N), summed in INT32."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.int8_linear") if hidden else np.random.default_rng(6)
    if not hidden:
        cases = [((3, 16, 5), False, "M=3, K=16, N=5"),
                 ((4, 256, 6), True, "K=256 with values near +-127: sums far beyond int8 (and int16)"),
                 ((2, 8, 3), False, "bias=None")]
    else:
        cases = [((int(g.integers(1, 20)), int(g.integers(1, 600)), int(g.integers(1, 20))), bool(g.random() < 0.5), "")
                 for _ in range(5)]
        cases.append(((5, 2048, 7), True, "K=2048 of +-127"))
    for (m, k, n), extreme, label in cases:
        if extreme:
            q_x = (g.choice([-1, 1], size=(m, k)) * g.integers(120, 128, size=(m, k))).astype(np.int8)
            q_w = (np.sign(q_x[:1]).repeat(n, 0) * g.integers(120, 128, size=(n, k))).astype(np.int8)
        else:
            q_x = g.integers(-127, 128, size=(m, k)).astype(np.int8)
            q_w = g.integers(-127, 128, size=(n, k)).astype(np.int8)
        s_x, s_w = float(g.uniform(0.001, 0.1)), g.uniform(0.001, 0.1, size=n)
        bias = None if "None" in label else g.standard_normal(n)
        where = "int8_linear" + (f" on {label}" if label else f" (M={m}, K={k}, N={n})")
        acc = np.array(quantization.exact_matmul(q_x, q_w.T), dtype=np.float64)           # exact integers
        want = acc * s_x * s_w[None, :] + (0.0 if bias is None else bias[None, :])
        got = call_student(fn, q_x, s_x, q_w, s_w, bias, forbid=[quantization.int8_linear, quantization.int8_matmul],
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


# --- 10. the tuner -------------------------------------------------------------------------------------

class _SimDevice:
    """A virtual clock and candidates whose first ``cold`` calls per key are slow."""

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
        steady, cold = self.times[name]
        n = self.calls.get((self.key, name), 0)
        self.calls[(self.key, name)] = n + 1
        self.step_runs[name] = self.step_runs.get(name, 0) + 1
        self.now += cold if n < self.cold else steady

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


def tune_reference(key: Any, candidates: Sequence[str], run: Callable, clock: Callable, cache: dict, warmup: int = 2,
                   repeats: int = 3) -> str:
    """The fastest candidate for ``key`` by the median of ``repeats`` runs after ``warmup``; cached."""
    if key in cache:
        return cache[key]
    medians = {}
    for c in candidates:
        for _ in range(warmup):
            run(c)
        times = []
        for _ in range(repeats):
            t0 = clock()
            run(c)
            times.append(clock() - t0)
        medians[c] = float(np.median(times))
    cache[key] = min(candidates, key=lambda c: medians[c])
    return cache[key]


def _tuner_plans(hidden: bool) -> list[tuple[list, str]]:
    """(steps, label): each step (key, {candidate: (steady s, cold s)}). The fastest when warm is
    never listed first, and is the slowest when cold (it compiles longest)."""
    if not hidden:
        a = ("(4096, 4096, 4096)", {"64x64": (3e-3, 3e-3), "128x128": (1e-3, 40e-3), "128x256": (2e-3, 30e-3)})
        b = ("(64, 64, 64)", {"64x64": (2e-5, 1e-3), "128x128": (5e-5, 40e-3), "128x256": (8e-5, 30e-3)})
        return [([a], "one shape: 128x128 is fastest once warm, slowest while compiling"),
                ([a, b, a, b], "two shapes, each asked twice (the second time comes from the cache)")]
    g = rng(f"{LAB}.tune")
    plans = []
    for p in range(3):
        steps, keys = [], []
        for s in range(int(g.integers(2, 4))):
            names = [f"cfg{i}" for i in range(int(g.integers(2, 6)))]
            steady = {n: float(g.uniform(1e-5, 1e-2)) for n in names}
            best = min(steady, key=steady.get)
            if names[0] == best:                               # the winner is never the first candidate
                names[0], names[1] = names[1], names[0]
            worst_cold = max(steady.values()) * float(g.uniform(5, 50))
            times = {n: (steady[n], worst_cold if n == best else steady[n] * float(g.uniform(1, 2))) for n in names}
            key = f"({int(g.integers(16, 8192))}, {int(g.integers(16, 8192))}, {int(g.integers(16, 8192))})"
            keys.append((key, times))
        order = keys + [keys[int(i)] for i in g.integers(0, len(keys), size=2)]
        plans.append(([(k, t) for k, t in order], f"hidden plan {p}"))
    return plans


@exercise
def tune(fn: Callable, hidden: bool = False) -> None:
    """``fn(key, candidates, run, clock, cache, warmup=2, repeats=3)`` -> the chosen candidate."""
    __tracebackhide__ = True
    warmup, repeats = 2, 3
    for steps, label in _tuner_plans(hidden):
        got = run_student(_drive_tuner, fn, [list(s) for s in steps], warmup, repeats, label="the tuner",
                          what=f"tune on {label}")
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
                if short:
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


# --- 11. a batch size under a latency budget ------------------------------------------------------------

@exercise
def largest_batch(fn: Callable, hidden: bool = False) -> None:
    """``fn(batches, latencies_s, budget_s)`` -> the largest batch whose latency <= budget, or None."""
    __tracebackhide__ = True
    if not hidden:
        cases = [([1, 2, 4, 8, 16, 32], [0.004, 0.006, 0.011, 0.019, 0.036, 0.070], 1 / 30,
                  "the 30 FPS budget of 33 ms"),
                 ([16, 1, 8, 4, 2], [0.036, 0.004, 0.019, 0.011, 0.006], 0.02, "batch sizes in no particular order"),
                 ([1, 2, 4, 8], [0.012, 0.009, 0.030, 0.025], 0.026, "noisy measurements: latency not monotone"),
                 ([4, 8], [0.05, 0.09], 1 / 30, "no batch fits (answer None)")]
    else:
        g = rng(f"{LAB}.largest_batch")
        cases = []
        for _ in range(5):
            batches = sorted({int(b) for b in 2 ** g.integers(0, 11, size=int(g.integers(3, 9)))})
            lat = [float(b * g.uniform(2e-4, 2e-3) + g.uniform(1e-3, 8e-3)) for b in batches]
            order = g.permutation(len(batches))
            cases.append(([batches[i] for i in order], [lat[i] for i in order], float(g.choice([1 / 30, 1 / 60, 0.1])), ""))
    for batches, lat, budget, label in cases:
        where = f"largest_batch with budget {budget * 1e3:.1f} ms" + (f" ({label})" if label else "")
        want = tuning.largest_batch_within(batches, lat, budget)
        got = call_student(fn, batches, lat, budget, forbid=[tuning.largest_batch_within], label="the batch choice",
                           what=where)
        if isinstance(got, (np.integer, float)) and float(got).is_integer():
            got = int(got)
        if got == want:
            continue
        per_frame = max((b for b, t in zip(batches, lat) if t / b <= budget), default=None)
        if got == per_frame:
            hint = ("that batch's *latency* exceeds the budget: you compared latency / batch (one frame's share of "
                    "the time, 1 / throughput); every frame of a batch waits for the whole batch")
        elif isinstance(got, int) and 0 <= got < len(batches) and got not in batches:
            hint = "return the batch size itself, not its index"
        else:
            hint = "keep every batch whose measured latency is <= the budget and return the largest (None if none)"
        raise GradingError(f"{where}: got {got!r}, expected {want!r}: {hint}")
