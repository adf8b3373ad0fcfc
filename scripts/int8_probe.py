"""Variants of the INT8 GEMM at 2048^3, timed against cuBLAS FP16 (a developer's probe, not a test).

    python3 scripts/int8_probe.py [--sizes 2048] [--rounds 3] [--top 20]
    python3 scripts/int8_probe.py --persistent | --hostdesc     (other families of variants)
    python3 scripts/int8_probe.py --flush --sizes 2048 4096     (host time per call, L2 treatments)

The package's kernel (``gpudl.gemm.int8``) spends about 2 us of its 22 us at 2048^3 writing
16 MiB of INT32 sums (the FP16-out layer form, 8 MiB, is that much faster). The default family
changes how tiles arrive and leave, one switch at a time (every variant without masks or
wrap-around: each dimension a multiple of its tile):

  TMA_LOAD   A and B^T tiles by tensor descriptors made in the kernel (one bulk copy per tile),
             not pointer loads
  TMA_STORE  the tile leaves through a descriptor (shared memory, then one bulk copy), in
             SUBTILE column slices (smaller staging buffer)
  WS         tl.range(..., warp_specialize=True): loads in a producer warp group
  ctas2      a cluster of two programs (num_ctas=2)

``--persistent``: pointer loads, a fixed number of programs (1-3 per multiprocessor) looping over
the tiles, with and without ``flatten``. ``--hostdesc``: TMA from descriptors made on the host
(kernel arguments), one tile per program or persistent, C stored from registers or by TMA.

Each variant is first run once in a process of its own (a kernel that faults spoils only that
process) and checked exact against torch._int_mm; the survivors are timed with
triton.testing.do_bench (median, L2 flushed) in rounds, each round against FP16 again; the ratio
is the median over the rounds. The results of November 28 are in scripts/PERF_NOTES.md.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
import triton
import triton.language as tl
import triton.testing

from gpudl._launch import ensure_tma_allocator
from gpudl.gemm import int8 as g8
from gpudl.gemm.triton_kernel import _grouped_tile


@triton.jit
def probe_kernel(a_ptr, bt_ptr, c_ptr, M, N, K, stride_am, stride_btn, stride_cm,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                 TMA_LOAD: tl.constexpr, TMA_STORE: tl.constexpr, SUBTILE: tl.constexpr, WS: tl.constexpr,
                 STAGES: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _grouped_tile(tl.program_id(0), tiles_m, tiles_n, GROUP_M)
    m0 = pid_m * BLOCK_M
    n0 = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    k_tiles = tl.cdiv(K, BLOCK_K)
    if TMA_LOAD:
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
        b_desc = tl.make_tensor_descriptor(bt_ptr, shape=[N, K], strides=[stride_btn, 1],
                                           block_shape=[BLOCK_N, BLOCK_K])
        for ki in tl.range(0, k_tiles, num_stages=STAGES, warp_specialize=WS):
            a = a_desc.load([m0, ki * BLOCK_K])
            bt = b_desc.load([n0, ki * BLOCK_K])
            acc = tl.dot(a, bt.T, acc, out_dtype=tl.int32)
    else:
        rows = m0 + tl.arange(0, BLOCK_M)
        cols = n0 + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :]
        b_ptrs = bt_ptr + cols[None, :] * stride_btn + ks[:, None]
        for ki in tl.range(0, k_tiles, num_stages=STAGES, warp_specialize=WS):
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
            acc = tl.dot(a, b, acc, out_dtype=tl.int32)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K
    if TMA_STORE:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                           block_shape=[BLOCK_M, BLOCK_N // SUBTILE])
        if SUBTILE == 1:
            c_desc.store([m0, n0], acc)
        elif SUBTILE == 2:
            acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            c0, c1 = tl.split(acc)
            c_desc.store([m0, n0], c0)
            c_desc.store([m0, n0 + BLOCK_N // 2], c1)
        else:
            acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, 2, BLOCK_N // 4)), (0, 3, 2, 1))
            h0, h1 = tl.split(acc)
            c0, c1 = tl.split(h0)          # columns [0, BN/4) and [BN/4, BN/2)
            c2, c3 = tl.split(h1)
            c_desc.store([m0, n0], c0)
            c_desc.store([m0, n0 + BLOCK_N // 4], c1)
            c_desc.store([m0, n0 + 2 * (BLOCK_N // 4)], c2)
            c_desc.store([m0, n0 + 3 * (BLOCK_N // 4)], c3)
    else:
        rows = m0 + tl.arange(0, BLOCK_M)
        cols = n0 + tl.arange(0, BLOCK_N)
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc)


@triton.jit
def persistent_kernel(a_ptr, bt_ptr, c_ptr, M, N, K, stride_am, stride_btn, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      NPROG: tl.constexpr, STAGES: tl.constexpr, FLATTEN: tl.constexpr):
    """Pointer loads, NPROG programs (two or three per multiprocessor) each looping over tiles:
    the INT32 store of one tile can drain while the next tile's products run."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NPROG, flatten=FLATTEN):
        pid_m, pid_n = _grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :]
        b_ptrs = bt_ptr + cols[None, :] * stride_btn + ks[:, None]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
        for ki in tl.range(0, k_tiles, num_stages=STAGES):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, out_dtype=tl.int32)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K
        tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc)


@triton.jit
def hostdesc_kernel(a_desc, b_desc, c_desc, c_ptr, M, N, K, stride_cm,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    STAGES: tl.constexpr, TMA_STORE: tl.constexpr, PERSISTENT: tl.constexpr, NPROG: tl.constexpr):
    """A and B^T by TMA from descriptors made on the host (kernel arguments: no descriptor is
    written to global memory at the kernel's start); C stored by TMA too (TMA_STORE) or from
    registers; one tile per program, or NPROG programs looping over the tiles (PERSISTENT)."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    first = tl.program_id(0)
    step = NPROG if PERSISTENT else tiles_m * tiles_n
    for tile in tl.range(first, tiles_m * tiles_n, step):
        pid_m, pid_n = _grouped_tile(tile, tiles_m, tiles_n, GROUP_M)
        m0 = pid_m * BLOCK_M
        n0 = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
        for ki in tl.range(0, k_tiles, num_stages=STAGES):
            a = a_desc.load([m0, ki * BLOCK_K])
            bt = b_desc.load([n0, ki * BLOCK_K])
            acc = tl.dot(a, bt.T, acc, out_dtype=tl.int32)
        if TMA_STORE:
            c_desc.store([m0, n0], acc)
        else:
            rows = m0 + tl.arange(0, BLOCK_M)
            cols = n0 + tl.arange(0, BLOCK_N)
            tl.store(c_ptr + rows[:, None] * stride_cm + cols[None, :], acc)


def launch_hostdesc(a, b_col, out, bm, bn, bk, gm, warps, stages, tma_store, persistent):
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    N = b_col.shape[1]
    bt = b_col.t()
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = TensorDescriptor.from_tensor(bt, [bn, bk])
    c_desc = TensorDescriptor.from_tensor(out, [bm, bn])
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    nprog = min(persistent * torch.cuda.get_device_properties(a.device).multi_processor_count, tiles) \
        if persistent else tiles
    hostdesc_kernel[(nprog,)](a_desc, b_desc, c_desc, out, M, N, K, out.stride(0), BLOCK_M=bm, BLOCK_N=bn,
                              BLOCK_K=bk, GROUP_M=gm, STAGES=stages, TMA_STORE=tma_store,
                              PERSISTENT=bool(persistent), NPROG=nprog, num_warps=warps, num_stages=stages)
    return out


def launch_persistent(a, b_col, out, bm, bn, bk, gm, warps, stages, per_sm, flatten):
    M, K = a.shape
    N = b_col.shape[1]
    bt = b_col.t()
    nprog = min(per_sm * torch.cuda.get_device_properties(a.device).multi_processor_count,
                triton.cdiv(M, bm) * triton.cdiv(N, bn))
    persistent_kernel[(nprog,)](a, bt, out, M, N, K, a.stride(0), bt.stride(0), out.stride(0), BLOCK_M=bm,
                                BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, NPROG=nprog, STAGES=stages, FLATTEN=flatten,
                                num_warps=warps, num_stages=stages)
    return out


def launch(a, b_col, out, bm, bn, bk, gm, warps, stages, tma_load, tma_store, subtile, ws, ctas=1):
    M, K = a.shape
    N = b_col.shape[1]
    bt = b_col.t()                       # (N, K) row-major view
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    probe_kernel[grid](a, bt, out, M, N, K, a.stride(0), bt.stride(0), out.stride(0), BLOCK_M=bm, BLOCK_N=bn,
                       BLOCK_K=bk, GROUP_M=gm, TMA_LOAD=tma_load, TMA_STORE=tma_store, SUBTILE=subtile, WS=ws,
                       STAGES=stages, num_warps=warps, num_stages=stages, num_ctas=ctas)
    return out


VARIANTS = []
for bm, bn, bk, w, st in ((128, 128, 64, 4, 5), (128, 128, 64, 4, 7), (128, 128, 128, 4, 3), (128, 128, 128, 8, 3),
                          (128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (128, 256, 128, 8, 3)):
    for tl_, ts, sub, ws in ((False, False, 1, False), (True, False, 1, False), (True, True, 1, False),
                             (True, True, 2, False), (True, True, 4, False), (False, True, 2, False),
                             (True, False, 1, True), (True, True, 2, True)):
        VARIANTS.append((bm, bn, bk, 8, w, st, tl_, ts, sub, ws))


ALL = VARIANTS + [(128, 128, 64, 8, 4, 5, False, False, 1, False, 2)]
if "--persistent" in sys.argv:     # (bm, bn, bk, gm, warps, stages, programs per SM, flatten), marked "P"
    ALL = [("P", bm, bn, bk, 8, w, st, per, fl) for bm, bn, bk, w, st, per in (
        (128, 128, 64, 4, 5, 2), (128, 128, 64, 4, 4, 2), (128, 128, 128, 4, 3, 2), (128, 64, 64, 4, 4, 3),
        (64, 128, 64, 4, 4, 3), (128, 64, 128, 4, 3, 3), (128, 128, 64, 8, 4, 1), (128, 64, 64, 4, 5, 2))
        for fl in (False, True)]

if "--hostdesc" in sys.argv:     # (bm, bn, bk, gm, warps, stages, TMA store, programs per SM or 0), marked "H"
    ALL = [("H", bm, bn, bk, 8, w, st, ts, per) for bm, bn, bk, w, st, per in (
        (128, 128, 64, 4, 5, 0), (128, 128, 64, 4, 4, 0), (128, 128, 128, 4, 3, 0), (128, 128, 128, 8, 3, 0),
        (128, 256, 64, 8, 4, 0), (128, 256, 128, 8, 3, 0), (256, 128, 64, 8, 4, 0), (128, 128, 64, 4, 4, 1),
        (128, 256, 64, 8, 4, 1), (128, 128, 128, 8, 3, 1)) for ts in (False, True)]


def run_variant(v, a, b_col, out) -> None:
    if v[0] == "H":
        launch_hostdesc(a, b_col, out, *v[1:])
    elif v[0] == "P":
        launch_persistent(a, b_col, out, *v[1:])
    else:
        launch(a, b_col, out, *v[:10], ctas=v[10] if len(v) > 10 else 1)
ok_why: dict[int, str] = {}


def check(i: int, n: int) -> None:
    """Compile and run variant ``i`` once, exact or not (a crash here spoils only this process)."""
    v = ALL[i]
    a = torch.randint(-127, 128, (n, n), dtype=torch.int8, device="cuda")
    b_col = torch.randint(-127, 128, (n, n), dtype=torch.int8, device="cuda").t().contiguous().t()
    ensure_tma_allocator()
    out = torch.zeros((n, n), dtype=torch.int32, device="cuda")
    run_variant(v, a, b_col, out)
    torch.cuda.synchronize()
    sys.exit(0 if torch.equal(out, torch._int_mm(a, b_col)) else 3)


def checked(n: int) -> set[int]:
    """The variants that run and are exact, each tried in a process of its own, four at a time."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> tuple[int, int, str]:
        r = subprocess.run([sys.executable, __file__, "--check", str(i), "--sizes", str(n)]
                           + [f for f in ("--persistent", "--hostdesc") if f in sys.argv], capture_output=True,
                           text=True, timeout=240)
        last = (r.stderr.strip().splitlines() or [""])[-1][:200]
        return i, r.returncode, last

    good = set()
    with ThreadPoolExecutor(4) as pool:
        for i, rc, last in pool.map(one, range(len(ALL))):
            if rc == 0:
                good.add(i)
            else:
                ok_why[i] = "NOT EXACT" if rc == 3 else f"rc {rc}: {last}"
    print(f"{len(good)} of {len(ALL)} variants run exact", flush=True)
    return good


def label(v) -> str:
    if v[0] == "H":
        return (f"hostdesc {v[1]}x{v[2]}x{v[3]} w{v[5]} s{v[6]}" + (" tmastore" if v[7] else "")
                + (f" persistent {v[8]}/SM" if v[8] else ""))
    if v[0] == "P":
        return f"persistent {v[1]}x{v[2]}x{v[3]} w{v[5]} s{v[6]} {v[7]}/SM" + (" flatten" if v[8] else "")
    bm, bn, bk, gm, w, st, tl_, ts, sub, ws = v
    return (f"{bm}x{bn}x{bk} w{w} s{st}" + (" tmaload" if tl_ else "") + (f" tmastore/{sub}" if ts else "")
            + (" ws" if ws else ""))


def flush_probe(sizes, rounds) -> None:
    """FP16, the INT8 sums and the FP16-out layer form (scales in the epilogue), each call timed
    with events after an L2 flush: do_bench's (``zero_`` of 256 MB, leaving L2 full of dirty
    lines), a read of 256 MB (clean lines), and a ``zero_`` of 1 GiB (four times as long: time
    for the host to get further ahead). Also the host's time to issue one call (no waiting) and
    each flush's GPU time. If a call's row is slower after the short flushes than after the long
    one, the host, not the GPU, set its pace."""
    import time

    small = torch.empty(256 * 2 ** 20, dtype=torch.int8, device="cuda")
    big = torch.empty(2 ** 30, dtype=torch.int8, device="cuda")
    flushes = {"zero 256MB": small.zero_, "read 256MB": lambda: small.sum(dtype=torch.int32),
               "zero 1GiB": big.zero_}

    def timed(fn, flush, n_runs=200) -> float:
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n_runs)]
        for _ in range(20):
            flush()
            fn()
        for s, e in ev:
            flush()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return sorted(s.elapsed_time(e) for s, e in ev)[n_runs // 2]

    def host_us(fn, n_calls=300) -> float:
        torch.cuda.synchronize()
        big.zero_()
        big.zero_()                     # ~0.5 ms of GPU work queued: the calls below never wait
        t0 = time.perf_counter()
        for _ in range(n_calls):
            fn()
        t = (time.perf_counter() - t0) / n_calls * 1e6
        torch.cuda.synchronize()
        return t

    for n in sizes:
        a = torch.randint(-127, 128, (n, n), dtype=torch.int8, device="cuda")
        b_col = torch.randint(-127, 128, (n, n), dtype=torch.int8, device="cuda").t().contiguous().t()
        ah, bh = a.half(), b_col.contiguous().half()
        sa, sb = torch.rand(n, device="cuda") / 1e3, torch.rand(n, device="cuda") / 1e3
        fns = {"fp16": lambda: torch.matmul(ah, bh), "int8 sums": lambda: g8.int8_matmul_triton(a, b_col),
               "int8 layer": lambda: g8.int8_matmul_triton(a, b_col, scale_a=sa, scale_b=sb,
                                                           out_dtype=torch.float16)}
        for fn in fns.values():
            fn()
        print(f"{n}^3 host us per call (issue only, 300 calls): " + "  ".join(
            f"{k} {min(host_us(f) for _ in range(3)):.1f}" for k, f in fns.items()), flush=True)
        print(f"{n}^3 flush GPU us: " + "  ".join(f"{k} {timed(f, lambda: None, 50) * 1e3:.0f}"
                                                   for k, f in flushes.items()), flush=True)
        res = {}
        for r in range(rounds):
            for fl_name, fl in flushes.items():
                for name, fn in fns.items():
                    res.setdefault((fl_name, name), []).append(timed(fn, fl))
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        for fl_name in flushes:
            fp = med(res[(fl_name, "fp16")])
            print(f"{n}^3 {fl_name:11s} " + "  ".join(
                f"{name} {med(res[(fl_name, name)]) * 1e3:.1f} us ({fp / med(res[(fl_name, name)]):.2f}x)"
                for name in fns), flush=True)


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[2048])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--persistent", action="store_true", help="the persistent variants instead")
    p.add_argument("--hostdesc", action="store_true", help="TMA from host-made descriptors instead")
    p.add_argument("--flush", action="store_true", help="the package's rows under three L2 treatments")
    p.add_argument("--check", type=int, help=argparse.SUPPRESS)     # one variant in a process of its own
    args = p.parse_args()
    if args.check is not None:
        check(args.check, args.sizes[0])
        return
    if args.flush:
        flush_probe(args.sizes, args.rounds)
        return
    ok = checked(args.sizes[0])
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__, flush=True)
    ensure_tma_allocator()
    for n in args.sizes:
        g = torch.Generator().manual_seed(n)
        a = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8).cuda()
        b_col = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8).cuda().t().contiguous().t()
        ah, bh = a.half(), b_col.contiguous().half()
        want = torch._int_mm(a, b_col)
        out = torch.empty_like(want)
        fns = {"package int8_matmul_triton (autotuned)": lambda: g8.int8_matmul_triton(a, b_col)}
        fns["package 128x128x64 w4 s7"] = lambda: g8.int8_matmul_triton(
            a, b_col, config=g8.Int8Config(128, 128, 64, 8, num_warps=4, num_stages=7))
        fns["package 128x128x64 w4 s5"] = lambda: g8.int8_matmul_triton(
            a, b_col, config=g8.Int8Config(128, 128, 64, 8, num_warps=4, num_stages=5))
        fns["_int_mm col"] = lambda: torch._int_mm(a, b_col)
        skipped = []
        for i, v in enumerate(ALL):
            if i not in ok:
                skipped.append((label(v[:10]), ok_why.get(i, "?")))
                continue
            fn = (lambda v=v: run_variant(v, a, b_col, out))
            name = label(v[:10]) + (f" ctas{v[10]}" if len(v) > 10 else "")
            try:
                out.zero_()
                fn()
                torch.cuda.synchronize()
                if not torch.equal(out, want):
                    skipped.append((name, "NOT EXACT"))
                    continue
            except Exception as e:  # noqa: BLE001
                skipped.append((name, f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"))
                continue
            fns[name] = fn
        for f in fns.values():
            f()
        torch.cuda.synchronize()
        ratios: dict[str, list[float]] = {k: [] for k in fns}
        times: dict[str, list[float]] = {k: [] for k in fns}
        fp16 = []
        for r in range(args.rounds):
            for name, f in (fns.items() if r % 2 == 0 else reversed(list(fns.items()))):
                base = bench(lambda: torch.matmul(ah, bh))
                ms = bench(f)
                fp16.append(base)
                ratios[name].append(base / ms)
                times[name].append(ms)
            print(f"round {r + 1} done", flush=True)
        ops = 2 * n ** 3
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        fp = med(fp16)
        print(f"\n== {n}^3: FP16 torch.matmul median {fp * 1e3:.1f} us ({ops / fp / 1e9:.0f} TFLOP/s), "
              f"range {min(fp16) * 1e3:.1f}-{max(fp16) * 1e3:.1f} us over {len(fp16)}")
        for name in sorted(fns, key=lambda k: -med(ratios[k]))[: args.top]:
            rs = ratios[name]
            print(f"  {name:48s} {med(times[name]) * 1e3:6.1f} us {ops / med(times[name]) / 1e9:6.0f} TOP/s  "
                  f"{med(rs):.3f}x  (rounds {' '.join(f'{x:.3f}' for x in rs)})")
        print("  config chosen by the autotuner:", g8.best_int8_config(n, n, n, torch.int32))
        for name, why in skipped:
            print(f"  {name:48s} skipped: {why}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
