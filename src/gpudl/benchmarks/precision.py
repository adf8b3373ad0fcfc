"""Tensor-core precision and sparsity: TF32 emulation vs cuBLAS in ULPs, the TFLOP/s ladder FP32/TF32/BF16/FP8 vs peak, 2:4 sparse vs dense.

On a GPU:

1. **TF32, bit by bit.** ``A @ B`` in FP32 with TF32 allowed (cuBLAS on tensor cores) against
   ``gpudl.mixed_precision``'s emulation: inputs rounded to TF32 (round-to-nearest-even, ties
   away, or truncation), exact products, one rounding to FP32. The error is in units of the last
   place of the FP32 result (ULPs); what is left after the right input rounding is cuBLAS's
   accumulation order. Inputs uniform in [0, 1) (no cancellation, so ULPs mean something) and
   normal.
2. **The ladder.** TFLOP/s of an N^3 matmul in FP32 (CUDA cores), TF32, FP16, BF16, FP8 E4M3
   (``torch._scaled_mm`` with per-tensor scales) and 2:4-sparse FP16/BF16
   (``torch.sparse.to_sparse_semi_structured``), each against ``gpudl.hardware``'s peak.
3. **2:4 vs dense** at a few sizes: FP16 sparse ``A @ B`` against the dense product, speed-up.

``--quick`` is the CPU's honest version: no tensor cores, so torch's CPU matmul of TF32-rounded
inputs against the same product rounded once (the size of "one accumulation-order rounding"),
FP32/BF16/FP8 matmul speeds on the CPU with no peak to compare, and a 2:4-pruned matrix through
torch's CSR sparse matmul against the dense product (no sparse hardware: nothing to gain).

Public names: ``add_arguments``, ``run``, ``tf32_rows``, ``ladder_rows``, ``sparse_rows``,
``cpu_tf32_rows``, ``cpu_ladder_rows``, ``cpu_sparse_rows``.
"""
from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np

from .. import hardware
from ..bench import Table, time_cpu
from ..formats import round_tf32_torch, ulp_error
from ..mixed_precision import fp8_matmul
from ..sparsity import semi_structured

ROUNDINGS = ("rne", "rna", "rtz")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--size", type=int, default=8192, help="N of the ladder's N^3 matmuls (GPU)")
    p.add_argument("--tf32-sizes", default="1024,4096", help="N of the TF32 comparison's N^3 matmuls (GPU)")
    p.add_argument("--sparse-sizes", default="2048,4096,8192,16384", help="N of the 2:4 vs dense matmuls (GPU)")
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timing per measurement")


def _ints(text: str) -> list[int]:
    return [int(v) for v in str(text).split(",") if v.strip()]


# --- on a GPU ------------------------------------------------------------------------------------

def tf32_rows(sizes: list[int], seed: int = 0) -> list[dict[str, Any]]:
    """cuBLAS TF32 against the emulation, per input distribution and input rounding: max and
    median error in FP32 ULPs of the result, and the normwise relative error. Rows for FP32
    (TF32 off) against the exact product show the scale."""
    import torch

    from ..bench import allow_tf32

    rows = []
    g = torch.Generator(device="cuda").manual_seed(seed)
    for n in sizes:
        for dist in ("uniform", "normal"):
            make = torch.rand if dist == "uniform" else torch.randn
            a = make(n, n, device="cuda", generator=g)
            b = make(n, n, device="cuda", generator=g)
            with allow_tf32(True):
                tf32 = (a @ b).double()
            with allow_tf32(False):
                fp32 = (a @ b).double()
            torch.cuda.synchronize()
            exact = a.double() @ b.double()

            def stats(actual, expected):
                ulps = torch.from_numpy(ulp_error(actual.cpu().numpy(), expected.cpu().numpy()))
                rel = ((actual - expected).norm() / expected.norm()).item()
                return float(ulps.max()), float(ulps.median()), rel

            for rounding in ROUNDINGS:
                emulated = (round_tf32_torch(a, rounding).double() @ round_tf32_torch(b, rounding).double()).float()
                mx, med, rel = stats(tf32, emulated.double())
                rows.append({"n": n, "inputs": dist, "compare": f"cuBLAS TF32 vs emulation ({rounding})",
                             "max_ulp": mx, "median_ulp": med, "rel_error": rel})
            mx, med, rel = stats(tf32, exact.float().double())
            rows.append({"n": n, "inputs": dist, "compare": "cuBLAS TF32 vs exact FP32", "max_ulp": mx,
                         "median_ulp": med, "rel_error": rel})
            mx, med, rel = stats(fp32, exact.float().double())
            rows.append({"n": n, "inputs": dist, "compare": "cuBLAS FP32 vs exact FP32", "max_ulp": mx,
                         "median_ulp": med, "rel_error": rel})
    return rows


def _peak(spec: Any, mode: str, sparse: bool = False) -> float | None:
    if spec is None:
        return None
    try:
        return hardware.peak_flops(spec, mode, tensor_cores=mode != "fp32", sparse=sparse)
    except ValueError:
        return None


def _two_four(n: int, k: int, dtype: Any) -> Any:
    """A (n, k) CUDA matrix with the 2:4 pattern [x, x, 0, 0] along k (the speed does not depend
    on which 2 of 4 are kept)."""
    import torch

    mask = torch.tensor([1, 1, 0, 0], device="cuda", dtype=dtype).repeat(n, k // 4)
    return torch.randn(n, k, device="cuda", dtype=dtype) * mask


def _timed(fn: Any, budget: float) -> float:
    from ..bench import time_cuda

    return time_cuda(fn, budget_s=budget).median


def ladder_rows(n: int, budget: float = 0.5) -> list[dict[str, Any]]:
    """TFLOP/s of an n^3 matmul in each mode on this GPU, with the peak and the fraction of it."""
    import torch

    from ..bench import allow_tf32, check_plausible, torch_dtype

    spec = hardware.detect()
    rows = []
    flops = 2 * n ** 3                                   # 2 n^3 FLOPs (Unit 02)
    for dt in ("fp32", "tf32", "fp16", "bf16"):
        x = torch.randn(n, n, device="cuda").to(torch_dtype(dt))     # (n, n)
        y = torch.randn(n, n, device="cuda").to(torch_dtype(dt))     # (n, n)
        with allow_tf32(dt == "tf32"):
            tflops = flops / _timed(lambda: torch.matmul(x, y), budget) / 1e12
        peak = _peak(spec, dt)
        if peak:
            check_plausible(tflops * 1e12, peak, what=f"{n}^3 {dt} matmul")
        rows.append({"mode": dt, "n": n, "tflops": tflops, "peak_tflops": peak and peak / 1e12,
                     "fraction": peak and tflops * 1e12 / peak, "note": ""})
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    peak = _peak(spec, "fp8")
    try:
        from ..mixed_precision import to_fp8

        a8, sa = to_fp8(a)
        b8t, sb = to_fp8(b.t().contiguous())
        b8 = b8t.t()
        seconds = _timed(lambda: torch._scaled_mm(a8, b8, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16), budget)
        err = ((fp8_matmul(a, b).double() - (a.double() @ b.double())).norm() / (a.double() @ b.double()).norm())
        rows.append({"mode": "fp8 e4m3 (_scaled_mm)", "n": n, "tflops": flops / seconds / 1e12,
                     "peak_tflops": peak and peak / 1e12, "fraction": peak and flops / seconds / peak,
                     "note": f"per-tensor scales, BF16 out, relative error {err.item():.1e}"})
    except Exception as exc:  # noqa: BLE001 - an unsupported mode is a row, not a crash
        rows.append({"mode": "fp8 e4m3 (_scaled_mm)", "n": n, "tflops": None, "peak_tflops": peak and peak / 1e12,
                     "fraction": None, "note": f"unsupported: {type(exc).__name__}: {exc}"[:300]})
    for dt, name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        peak = _peak(spec, name, sparse=True)
        a = _two_four(n, n, dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        sparse, why = semi_structured(a)
        if sparse is None:
            rows.append({"mode": f"{name} 2:4 sparse", "n": n, "tflops": None, "peak_tflops": peak and peak / 1e12,
                         "fraction": None, "note": f"unsupported: {why}"[:300]})
            continue
        try:
            seconds = _timed(lambda: torch.mm(sparse, b), budget)
        except Exception as exc:  # noqa: BLE001
            rows.append({"mode": f"{name} 2:4 sparse", "n": n, "tflops": None, "peak_tflops": peak and peak / 1e12,
                         "fraction": None, "note": f"unsupported: {type(exc).__name__}: {exc}"[:300]})
            continue
        rate = flops / seconds                               # counted as the dense product it replaces
        rows.append({"mode": f"{name} 2:4 sparse", "n": n, "tflops": rate / 1e12, "peak_tflops": peak and peak / 1e12,
                     "fraction": peak and rate / peak, "note": "dense-equivalent FLOP/s (2n^3 / time)"})
    return rows


def sparse_rows(sizes: list[int], budget: float = 0.5) -> list[dict[str, Any]]:
    """FP16 ``A @ B`` with A 2:4-sparse (semi-structured) against the dense product, per size."""
    import torch

    rows = []
    for n in sizes:
        a = _two_four(n, n, torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        dense_s = _timed(lambda: a @ b, budget)
        sparse, why = semi_structured(a)
        if sparse is None:
            rows.append({"n": n, "case": "fp16 A @ B", "dense_ms": dense_s * 1e3, "sparse_ms": None, "speedup": None,
                         "note": why[:300]})
            continue
        try:
            sparse_s = _timed(lambda: torch.mm(sparse, b), budget)
            err = ((torch.mm(sparse, b).float() - (a @ b).float()).abs().max() / (a @ b).float().abs().max()).item()
        except Exception as exc:  # noqa: BLE001
            rows.append({"n": n, "case": "fp16 A @ B", "dense_ms": dense_s * 1e3, "sparse_ms": None, "speedup": None,
                         "note": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        rows.append({"n": n, "case": "fp16 A @ B", "dense_ms": dense_s * 1e3, "sparse_ms": sparse_s * 1e3,
                     "speedup": dense_s / sparse_s, "note": f"max |sparse - dense| / max |dense| = {err:.1e}"})
    return rows


# --- on a CPU ------------------------------------------------------------------------------------

def cpu_tf32_rows(n: int = 96, seed: int = 0) -> list[dict[str, Any]]:
    """No cuBLAS here: TF32-rounded inputs multiplied by torch's CPU FP32 matmul against their
    exact product rounded once to FP32, in ULPs (what one accumulation order costs), the exact
    TF32 product against the exact FP32 one (what the inputs' rounding costs), and torch's CPU FP32
    matmul against exact."""
    import torch

    g = np.random.default_rng(seed)
    rows = []
    for dist in ("uniform", "normal"):
        a = (g.random((n, n)) if dist == "uniform" else g.standard_normal((n, n))).astype(np.float32)
        b = (g.random((n, n)) if dist == "uniform" else g.standard_normal((n, n))).astype(np.float32)
        at, bt = round_tf32_torch(torch.from_numpy(a)), round_tf32_torch(torch.from_numpy(b))
        once = (at.double() @ bt.double()).float().numpy()
        ordered = (at @ bt).numpy()
        exact32 = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
        cpu = (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
        for name, actual, expected in (("TF32 inputs: torch's FP32 sum vs one rounding", ordered, once),
                                       ("TF32 inputs (one rounding) vs exact FP32", once, exact32),
                                       ("torch CPU FP32 vs exact FP32", cpu, exact32)):
            ulps = ulp_error(actual, expected)
            rows.append({"n": n, "inputs": dist, "compare": name, "max_ulp": float(ulps.max()),
                         "median_ulp": float(np.median(ulps)),
                         "rel_error": float(np.linalg.norm(actual.astype(np.float64) - expected) / np.linalg.norm(expected))})
    return rows


def cpu_ladder_rows(n: int = 512, budget: float = 0.3) -> list[dict[str, Any]]:
    """torch's CPU matmul in FP32, BF16, FP16 and FP8 (``_scaled_mm``) at n^3: no tensor cores and
    no peak to compare with."""
    import torch

    flops = 2 * n ** 3                                   # 2 n^3 FLOPs (Unit 02)
    rows = []
    a32, b32 = torch.randn(n, n), torch.randn(n, n)
    for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16)):
        a, b = a32.to(dt), b32.to(dt)
        t = time_cpu(lambda: a @ b, budget_s=budget, min_runs=3).median
        rows.append({"mode": name, "n": n, "tflops": flops / t / 1e12, "peak_tflops": None, "fraction": None,
                     "note": "CPU"})
    try:
        from ..mixed_precision import to_fp8

        a8, sa = to_fp8(a32)
        b8t, sb = to_fp8(b32.t().contiguous())
        t = time_cpu(lambda: torch._scaled_mm(a8, b8t.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16),
                     budget_s=budget, min_runs=3).median
        rows.append({"mode": "fp8 e4m3 (_scaled_mm)", "n": n, "tflops": flops / t / 1e12, "peak_tflops": None,
                     "fraction": None, "note": "CPU"})
    except Exception as exc:  # noqa: BLE001
        rows.append({"mode": "fp8 e4m3 (_scaled_mm)", "n": n, "tflops": None, "peak_tflops": None, "fraction": None,
                     "note": f"unsupported on this CPU build: {type(exc).__name__}"})
    _, why = semi_structured(a32)
    rows.append({"mode": "2:4 sparse", "n": n, "tflops": None, "peak_tflops": None, "fraction": None, "note": why})
    return rows


def cpu_sparse_rows(sizes: tuple[int, ...] = (128, 256), budget: float = 0.3) -> list[dict[str, Any]]:
    """A 2:4-pruned FP32 matrix (the pattern [x, x, 0, 0] along K) through torch's CSR sparse
    matmul against torch's dense product: half the multiplications, but no sparse hardware to do
    them faster, and index arithmetic a dense BLAS does not pay."""
    import torch

    g = torch.Generator().manual_seed(0)
    rows = []
    for n in sizes:
        mask = torch.tensor([1.0, 1.0, 0.0, 0.0]).repeat(n, n // 4)
        a = torch.randn(n, n, generator=g) * mask
        b = torch.randn(n, n, generator=g)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # "Sparse CSR tensor support is in beta state"
            csr = a.to_sparse_csr()
        dense_s = time_cpu(lambda: a @ b, budget_s=budget, min_runs=5).median
        sparse_s = time_cpu(lambda: csr @ b, budget_s=budget, min_runs=5).median
        err = ((csr @ b) - a @ b).abs().max().item() / (a @ b).abs().max().item()
        rows.append({"n": n, "case": "fp32 torch CPU A @ B", "dense_ms": dense_s * 1e3, "sparse_ms": sparse_s * 1e3,
                     "speedup": dense_s / sparse_s,
                     "note": f"torch CSR (unstructured) vs dense BLAS; max |sparse - dense| / max |dense| = {err:.1e}"})
    return rows


# --- the table -------------------------------------------------------------------------------------

def _figures(ladder: list[dict[str, Any]], sparse: list[dict[str, Any]]) -> dict[str, Any]:
    from matplotlib.figure import Figure          # no pyplot: no backend, no global state

    figs = {}
    fig = Figure(figsize=(7, 4))
    ax = fig.add_subplot()
    names = [r["mode"] for r in ladder]
    x = np.arange(len(names))
    ax.bar(x - 0.2, [r["tflops"] or 0 for r in ladder], 0.4, label="measured")
    ax.bar(x + 0.2, [r["peak_tflops"] or 0 for r in ladder], 0.4, label="peak (gpudl.hardware)", alpha=0.6)
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("matmul throughput by precision")
    ax.legend()
    fig.tight_layout()
    figs["precision_ladder"] = fig
    done = [r for r in sparse if r["speedup"]]
    if done:
        fig = Figure(figsize=(5, 3.5))
        ax = fig.add_subplot()
        ax.plot([r["n"] for r in done], [r["speedup"] for r in done], "o-")
        ax.axhline(2.0, ls="--", c="gray", label="2x: half the math")
        ax.axhline(1.0, ls=":", c="gray")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("N (N x N x N)")
        ax.set_ylabel("speed-up of 2:4 over dense")
        ax.legend()
        fig.tight_layout()
        figs["sparse_speedup"] = fig
    return figs


def _table_rows(tf32: list[dict[str, Any]], ladder: list[dict[str, Any]], sparse: list[dict[str, Any]]):
    rows = []
    for r in tf32:
        rows.append({"part": "TF32 in ULPs", "n": r["n"], "case": f"{r['inputs']}: {r['compare']}",
                     "max_ulp": r["max_ulp"], "median_ulp": r["median_ulp"], "rel_error": r["rel_error"]})
    for r in ladder:
        rows.append({"part": "ladder", "n": r["n"], "case": r["mode"], "tflops": r["tflops"],
                     "peak_tflops": r["peak_tflops"], "fraction": r["fraction"], "note": r["note"]})
    for r in sparse:
        rows.append({"part": "2:4 vs dense", "n": r["n"], "case": r["case"], "dense_ms": r["dense_ms"],
                     "sparse_ms": r["sparse_ms"], "speedup": r["speedup"], "note": r["note"]})
    return rows


def run(args: argparse.Namespace) -> Table:
    from ..hardware import cuda_available

    if args.quick or not cuda_available():
        tf32, ladder, sparse = cpu_tf32_rows(64), cpu_ladder_rows(256, budget=0.2), cpu_sparse_rows((64, 128), 0.2)
        where = "CPU (--quick: no tensor cores, no peak)"
    else:
        tf32 = tf32_rows(_ints(args.tf32_sizes))
        ladder = ladder_rows(args.size, args.budget)
        sparse = sparse_rows(_ints(args.sparse_sizes), args.budget)
        spec = hardware.detect()
        where = spec.name if spec else "an unknown GPU"
    best: dict[tuple, dict[str, Any]] = {}
    for r in tf32:
        if r["compare"].startswith("cuBLAS TF32 vs emulation"):
            key = (r["n"], r["inputs"])
            if key not in best or r["max_ulp"] < best[key]["max_ulp"]:
                best[key] = r
    notes = [f"device: {where}"]
    notes += [f"TF32 n={k[0]}, {k[1]} inputs: cuBLAS is closest to the emulation with "
              f"{v['compare'].rpartition('(')[2].rstrip(')')} input rounding: max {v['max_ulp']:.3g} ULP, "
              f"median {v['median_ulp']:.3g} ULP" for k, v in best.items()]
    notes += [f"{r['mode']}: {r['note']}" for r in ladder if r["tflops"] is None]
    notes += [f"2:4 at n={r['n']}: {r['note']}" for r in sparse if r["speedup"] is None]
    return Table(title="Precision and sparsity on tensor cores", rows=_table_rows(tf32, ladder, sparse), notes=notes,
                 figures=_figures(ladder, sparse))
