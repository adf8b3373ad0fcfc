"""Time INT8 GEMM configurations against cuBLAS FP16 on a GPU (a developer's sweep, not a test).

    python3 scripts/int8_tune.py [--sizes 2048 4096 8192] [--quick]

For each size: torch.matmul FP16, torch._int_mm (B column-major), then every configuration of
``gpudl.gemm.int8`` below (plain and TMA persistent), each checked exact against torch._int_mm,
timed with triton.testing.do_bench (median, L2 flushed), in turns against FP16 so a boosting
clock favours no row. Prints one table per size, fastest first.
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
import triton.testing

from gpudl.gemm import int8 as g8


SMALL = [(128, 128, 64, 8, 4, st, False) for st in (3, 4, 5, 7)] + [
    (128, 128, 64, 4, 4, 6, False), (128, 128, 64, 16, 4, 6, False), (128, 128, 64, 8, 8, 5, False),
    (128, 128, 64, 8, 8, 6, False), (64, 128, 128, 8, 4, 4, False), (64, 256, 64, 8, 4, 5, False),
    (128, 64, 128, 8, 4, 4, False), (64, 128, 64, 8, 4, 6, False), (128, 128, 32, 8, 4, 8, False),
    (64, 64, 128, 8, 4, 4, False), (128, 128, 64, 8, 4, 6, True), (128, 128, 64, 8, 8, 5, True),
    (128, 128, 64, 8, 4, 4, True), (64, 128, 128, 8, 4, 4, True), (128, 64, 128, 8, 4, 4, True),
    (128, 128, 64, 8, 4, 6, False),
    # 128-byte K tiles (November 28, second round)
    (128, 128, 128, 8, 4, 3, False), (128, 128, 128, 8, 4, 4, False), (128, 128, 128, 4, 4, 3, False),
    (128, 128, 128, 16, 4, 3, False), (128, 128, 128, 8, 8, 4, False), (128, 128, 128, 8, 4, 3, True),
    (128, 128, 128, 8, 4, 4, True), (128, 128, 128, 8, 8, 4, True), (64, 128, 128, 8, 4, 5, False),
    (128, 64, 128, 8, 4, 5, False), (64, 256, 128, 8, 4, 3, False), (256, 64, 128, 8, 4, 3, False)]


def _configs(rows: list[tuple]) -> list[g8.Int8Config]:
    return [g8.Int8Config(m, n, k, gm, num_warps=w, num_stages=s, tma=t) for m, n, k, gm, w, s, t in rows]


def configs(quick: bool, small: bool = False) -> list[g8.Int8Config]:
    if small:
        return _configs(SMALL)
    out = list(g8.INT8_CONFIGS)
    extra = [
        (128, 256, 128, 8, 8, 2, False), (128, 256, 128, 16, 8, 3, False), (256, 128, 128, 16, 8, 3, False),
        (128, 256, 64, 8, 8, 4, False), (128, 256, 64, 8, 8, 3, False), (256, 128, 64, 8, 8, 4, False),
        (256, 256, 64, 8, 8, 3, False), (256, 256, 128, 8, 8, 2, False), (64, 256, 128, 8, 4, 4, False),
        (128, 128, 256, 8, 8, 3, False), (128, 256, 128, 8, 8, 2, True), (128, 256, 64, 8, 8, 4, True),
        (128, 256, 64, 8, 8, 5, True), (256, 128, 64, 8, 8, 4, True), (128, 256, 128, 16, 8, 4, True),
        (256, 256, 64, 8, 8, 3, True), (128, 128, 128, 8, 8, 5, True), (128, 128, 256, 8, 8, 3, True),
    ]
    if not quick:
        out += _configs(extra)
    return list(dict.fromkeys(out))


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--top", type=int, default=8)
    p.add_argument("--small", action="store_true", help="the configurations for 2048^3")
    p.add_argument("--layer", action="store_true", help="per-row and per-column scales in the epilogue, FP16 out")
    args = p.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__, flush=True)
    cands = configs(args.quick, args.small)
    for n in args.sizes:
        g = torch.Generator().manual_seed(n)
        a = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8).cuda()
        b = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8).cuda()
        b_col = b.t().contiguous().t()
        ah, bh = torch.randn(n, n, device="cuda", dtype=torch.float16), torch.randn(n, n, device="cuda",
                                                                                    dtype=torch.float16)
        want = torch._int_mm(a, b_col)
        kw = {}
        if args.layer:
            kw = dict(scale_a=torch.rand(n, device="cuda") / 1000, scale_b=torch.rand(n, device="cuda") / 1000,
                      out_dtype=torch.float16)
            want = (want.double() * kw["scale_a"].double()[:, None] * kw["scale_b"].double()[None, :]).half()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 1.0:
            torch.matmul(ah, bh)
        torch.cuda.synchronize()
        ops = 2 * n ** 3
        rows, fp16 = [], []
        for cfg in cands:
            try:
                got = g8.int8_matmul_triton(a, b_col, config=cfg, **kw)
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001
                rows.append((cfg.label + f" gm{cfg.group_m} w{cfg.num_warps} s{cfg.num_stages}", None,
                             type(e).__name__ + ": " + str(e)[:300]))
                if len(rows) == 1:
                    import traceback
                    traceback.print_exc()
                continue
            if not (torch.allclose(got.float(), want.float(), rtol=2e-3, atol=1e-3) if kw else torch.equal(got, want)):
                rows.append((cfg.label, None, "NOT EXACT"))
                continue
            fp16.append(bench(lambda: torch.matmul(ah, bh)))
            ms = bench(lambda: g8.int8_matmul_triton(a, b_col, config=cfg, **kw))
            rows.append((f"{cfg.label} gm{cfg.group_m} w{cfg.num_warps} s{cfg.num_stages}", ms, ""))
        if not fp16:
            fp16.append(bench(lambda: torch.matmul(ah, bh)))
        fp16_ms = sorted(fp16)[len(fp16) // 2]
        intmm = bench(lambda: torch._int_mm(a, b_col))
        print(f"\n== {n}^3: FP16 torch.matmul {fp16_ms:.4f} ms = {ops / fp16_ms / 1e9:.0f} TFLOP/s (median of "
              f"{len(fp16)}, range {min(fp16):.4f}-{max(fp16):.4f}); _int_mm col-major {intmm:.4f} ms = "
              f"{ops / intmm / 1e9:.0f} TOP/s ({fp16_ms / intmm:.2f}x)", flush=True)
        good = sorted((r for r in rows if r[1] is not None), key=lambda r: r[1])
        for label, ms, _ in good[: args.top if args.quick else len(good)]:
            print(f"  {label:34s} {ms:.4f} ms {ops / ms / 1e9:6.0f} TOP/s  {fp16_ms / ms:.2f}x FP16")
        for label, _, why in rows:
            if why:
                print(f"  {label:34s} skipped: {why}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
