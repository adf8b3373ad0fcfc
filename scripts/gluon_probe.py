"""INT8 GEMMs written in Gluon (Triton's explicit layer), timed against cuBLAS FP16 (a developer's
probe, not a test).

    python3 scripts/gluon_probe.py [--sizes 2048 4096 8192] [--rounds 3]

Why: at 2048^3 the package's kernel (``gpudl.gemm.int8``, 128x128x64 tiles, two programs per
multiprocessor) sits at 1.27-1.33x FP16 on an H200, and none of the 93 variants Triton's own
pipeliner compiled did better (scripts/PERF_NOTES.md). A 128x128 tile reads more shared memory
per multiply than a 128x256 one: every INT8 wgmma (N at most 224 for 8-bit types) reads its A and
B slices from shared memory, and the tile's loads write it. Per INT8 multiply-add at full rate that
is about 160 bytes a clock for 128x128 and 128-144 for 128x256, against ~128 the shared memory
gives. Triton's pipeliner did badly with 128x256 (0.94-1.13x); here the pipeline is written out:

  pipe  one partition: TMA loads NUM_BUF k-tiles ahead, wgmma kept one in flight, and a buffer
        refilled as soon as the wgmma that read it has finished
  ws    warp-specialized: one producer warp issues the TMA loads, the default partition
        (num_warps warps) runs the wgmmas and hands buffers back through mbarriers

  split a BM x 2*BN tile computed as two halves in turn: the first half's TMA store drains while
        the second half's k-loop runs

  pp    ping-pong: two BM x BN tiles side by side, one per consumer warp group, fed in turn by a
        producer warp; the first group stores its tile while the second's k-loop runs

  EPI   0: the tile leaves by a TMA store from shared memory; 1: stored from the wgmma registers

(A's slice from registers, read once for both halves of N, does not compile in Triton 3.6: the wait
on an 8-bit register operand fails to lower, "Unexpected bitwidth in WGMMAWaitGroupOp: 8".)

Each variant is first run in a process of its own and checked exact against torch._int_mm; the
survivors are timed with triton.testing.do_bench (median, L2 flushed), descriptors built once
outside the timed call, in rounds, each round against FP16 and the package's kernel again.

Result on an H200 (November 28, scripts/PERF_NOTES.md): at 2048^3 the best of these ties the
package's kernel (1.28x / 1.30x against 1.27x / 1.30x in the same runs); at 8192^3 it leads
(1.70-1.76x against 1.61-1.65x). The shared-memory argument above did not decide 2048^3. The
ping-pong family (sixth session) was exact and slower everywhere (best 1.12x at 2048^3, 1.42x at
8192^3): one warp group alone on a 128x128 tile does not keep the tensor cores fed.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
import triton
import triton.testing
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)


@gluon.constexpr_function
def wgmma_layout(block_m, block_n, num_warps):
    """The accumulator's layout: warps stacked along M first (16 rows each), and the widest wgmma N
    that divides block_n (8-bit wgmma: N at most 224, a multiple of 16)."""
    wpc = [4, 1]
    while wpc[0] * wpc[1] != num_warps:
        if block_m > 16 * wpc[0]:
            wpc[0] *= 2
        else:
            wpc[1] *= 2
    n_reps = triton.cdiv(num_warps, triton.cdiv(block_m, 16))
    n = min(max(block_n // n_reps, 8), 224)
    n -= n % 16
    while block_n % n:
        n -= 16
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=wpc, instr_shape=[16, n, 32])


@gluon.jit
def _barriers(n: gl.constexpr):
    bars = gl.allocate_shared_memory(gl.int64, [n, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(n):
        mbarrier.init(bars.index(i), count=1)
    return bars


@gluon.jit
def _load(a_desc, b_desc, a_bufs, b_bufs, bars, off_m, off_n, step, k_tiles, pred):
    """Step ``step`` of the k-loop into buffer step % NUM_BUF, completing on its barrier. A step
    past the k-tiles (``split``: its second half) reads the next BN columns of B again from k=0."""
    NUM_BUF: gl.constexpr = a_bufs.type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    s = step % NUM_BUF
    kk = step % k_tiles
    mbarrier.expect(bars.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(a_desc, [off_m, kk * BK], bars.index(s), a_bufs.index(s), pred)
    tma.async_copy_global_to_shared(b_desc, [off_n + (step // k_tiles) * BN, kk * BK], bars.index(s),
                                    b_bufs.index(s), pred)


@gluon.jit
def _tile(M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    pid = gl.program_id(0)
    tiles_m = gl.cdiv(M, BM)
    tiles_n = gl.cdiv(N, BN)
    width = GROUP_M * tiles_n
    first_m = (pid // width) * GROUP_M
    size = gl.minimum(tiles_m - first_m, GROUP_M)
    return (first_m + (pid % width) % size) * BM, ((pid % width) // size) * BN


@gluon.jit
def _setup(a_desc, b_desc, TILE_N: gl.constexpr, GROUP_M: gl.constexpr, NUM_BUF: gl.constexpr):
    """This program's tile (off_m, off_n; TILE_N columns wide), the number of k-tiles, M and N, and
    NUM_BUF shared-memory buffers for the tiles of A and of B^T."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    M = a_desc.shape[0]
    N = b_desc.shape[0]
    off_m, off_n = _tile(M, N, BM, TILE_N, GROUP_M)
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [NUM_BUF] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [NUM_BUF] + b_desc.block_type.shape, b_desc.layout)
    return off_m, off_n, gl.cdiv(a_desc.shape[1], BK), M, N, a_bufs, b_bufs


@gluon.jit
def _epilogue(acc, c_desc, c_ptr, stride_cm, off_m, off_n, M, N, EPI: gl.constexpr):
    BM: gl.constexpr = acc.type.shape[0]
    BN: gl.constexpr = acc.type.shape[1]
    if EPI == 0:
        c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
        c_smem.store(acc)
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
        tma.store_wait(pendings=0)
    else:
        layout: gl.constexpr = acc.type.layout
        rows = off_m + gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
        cols = off_n + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
        ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :]
        gl.store(ptrs, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))


@gluon.jit
def pipe_kernel(a_desc, b_desc, c_desc, c_ptr, stride_cm, GROUP_M: gl.constexpr, NUM_BUF: gl.constexpr,
                EPI: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    off_m, off_n, k_tiles, M, N, a_bufs, b_bufs = _setup(a_desc, b_desc, BN, GROUP_M, NUM_BUF)
    bars = _barriers(NUM_BUF)
    for i in gl.static_range(NUM_BUF):
        _load(a_desc, b_desc, a_bufs, b_bufs, bars, off_m, off_n, i, k_tiles, i < k_tiles)
    acc = gl.zeros((BM, BN), dtype=gl.int32, layout=wgmma_layout(BM, BN, num_warps))
    for i in range(k_tiles):
        s = i % NUM_BUF
        mbarrier.wait(bars.index(s), (i // NUM_BUF) & 1)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
        # the wgmma of k-tile i-1 has finished: its buffer takes k-tile i-1+NUM_BUF
        j = i - 1 + NUM_BUF
        _load(a_desc, b_desc, a_bufs, b_bufs, bars, off_m, off_n, j, k_tiles, (i > 0) & (j < k_tiles))
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
    _epilogue(acc, c_desc, c_ptr, stride_cm, off_m, off_n, M, N, EPI)


@gluon.jit
def _ws_producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles):
    NUM_BUF: gl.constexpr = a_bufs.type.shape[0]
    for i in range(k_tiles):
        mbarrier.wait(empty.index(i % NUM_BUF), ((i // NUM_BUF) & 1) ^ 1)
        _load(a_desc, b_desc, a_bufs, b_bufs, ready, off_m, off_n, i, k_tiles, True)


@gluon.jit
def _ws_consumer(a_bufs, b_bufs, ready, empty, k_tiles, mma_layout: gl.constexpr):
    NUM_BUF: gl.constexpr = a_bufs.type.shape[0]
    BM: gl.constexpr = a_bufs.type.shape[1]
    BN: gl.constexpr = b_bufs.type.shape[1]
    acc = gl.zeros((BM, BN), dtype=gl.int32, layout=mma_layout)
    for i in range(k_tiles):
        s = i % NUM_BUF
        mbarrier.wait(ready.index(s), (i // NUM_BUF) & 1)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
        mbarrier.arrive(empty.index((i + NUM_BUF - 1) % NUM_BUF), count=1, pred=i > 0)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
    return (acc, )      # Triton 3.6 flattens the default partition's results as a sequence


@gluon.jit
def ws_kernel(a_desc, b_desc, c_desc, c_ptr, stride_cm, GROUP_M: gl.constexpr, NUM_BUF: gl.constexpr,
              EPI: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    off_m, off_n, k_tiles, M, N, a_bufs, b_bufs = _setup(a_desc, b_desc, BN, GROUP_M, NUM_BUF)
    ready = _barriers(NUM_BUF)
    empty = _barriers(NUM_BUF)
    mma_layout: gl.constexpr = wgmma_layout(BM, BN, num_warps)
    acc, = gl.warp_specialize([
        (_ws_consumer, (a_bufs, b_bufs, ready, empty, k_tiles, mma_layout)),
        (_ws_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles)),
    ], [1], [40])
    _epilogue(acc, c_desc, c_ptr, stride_cm, off_m, off_n, M, N, EPI)


@gluon.jit
def split_kernel(a_desc, b_desc, c_desc, c_ptr, stride_cm, GROUP_M: gl.constexpr, NUM_BUF: gl.constexpr,
                 EPI: gl.constexpr, num_warps: gl.constexpr):
    """A BM x 2*BNH tile computed as two halves in turn: the first half's TMA store drains while
    the second half's k-loop runs, so only half of the tile's store is left after the last wgmma."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BNH: gl.constexpr = b_desc.block_type.shape[0]
    off_m, off_n, k_tiles, M, N, a_bufs, b_bufs = _setup(a_desc, b_desc, 2 * BNH, GROUP_M, NUM_BUF)
    steps = 2 * k_tiles
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BNH], c_desc.layout)
    bars = _barriers(NUM_BUF)
    for i in gl.static_range(NUM_BUF):
        _load(a_desc, b_desc, a_bufs, b_bufs, bars, off_m, off_n, i, k_tiles, i < steps)
    acc = gl.zeros((BM, BNH), dtype=gl.int32, layout=wgmma_layout(BM, BNH, num_warps))
    for t in range(steps):
        s = t % NUM_BUF
        kk = t % k_tiles
        mbarrier.wait(bars.index(s), (t // NUM_BUF) & 1)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), acc, use_acc=kk != 0, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
        j = t - 1 + NUM_BUF
        _load(a_desc, b_desc, a_bufs, b_bufs, bars, off_m, off_n, j, k_tiles, (t > 0) & (j < steps))
        if kk == k_tiles - 1:
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
            tma.store_wait(pendings=0)
            c_smem.store(acc)
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, off_n + (t // k_tiles) * BNH], c_smem)
    tma.store_wait(pendings=0)


@gluon.jit
def _pp_consumer(a_bufs, b_bufs, ready, empty, go, c_desc, c_smem, off_m, off_n, k_tiles,
                 LEAD: gl.constexpr, mma_layout: gl.constexpr):
    """One warp group's tile, then its own store. The lead group takes steps 0 .. k_tiles - 1 of
    the ring, the other the next k_tiles. A wait on a barrier's parity cannot tell its phases two
    apart, so the second group starts waiting only once the lead has seen its last k-tile arrive
    (``go``): from then on it is never more than one phase ahead of a buffer."""
    NUM_BUF: gl.constexpr = a_bufs.type.shape[0]
    BM: gl.constexpr = a_bufs.type.shape[1]
    BN: gl.constexpr = b_bufs.type.shape[1]
    first = 0 if LEAD else k_tiles
    if not LEAD:
        mbarrier.wait(go, 0)
    acc = gl.zeros((BM, BN), dtype=gl.int32, layout=mma_layout)
    for i in range(k_tiles):
        t = first + i
        s = t % NUM_BUF
        mbarrier.wait(ready.index(s), (t // NUM_BUF) & 1)
        if LEAD:
            mbarrier.arrive(go, count=1, pred=i == k_tiles - 1)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
        mbarrier.arrive(empty.index((t + NUM_BUF - 1) % NUM_BUF), count=1, pred=i > 0)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
    # the last buffer goes back too: the producer refills it with the other group's k-tiles
    mbarrier.arrive(empty.index((first + k_tiles - 1) % NUM_BUF), count=1)
    c_smem.store(acc)
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(pendings=0)


@gluon.jit
def _pp_producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles):
    NUM_BUF: gl.constexpr = a_bufs.type.shape[0]
    for i in range(2 * k_tiles):
        mbarrier.wait(empty.index(i % NUM_BUF), ((i // NUM_BUF) & 1) ^ 1)
        _load(a_desc, b_desc, a_bufs, b_bufs, ready, off_m, off_n, i, k_tiles, True)


@gluon.jit
def pp_kernel(a_desc, b_desc, c_desc, c_ptr, stride_cm, GROUP_M: gl.constexpr, NUM_BUF: gl.constexpr,
              EPI: gl.constexpr, num_warps: gl.constexpr):
    """Ping-pong: two BM x BN tiles side by side, each owned by a warp group of its own, fed in turn
    by one producer warp. The first group's mainloop runs alone, then the second's while the first
    stores its tile, so only one tile's store is left after the last wgmma (two programs on one
    multiprocessor run their mainloops together and store together)."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    off_m, off_n, k_tiles, M, N, a_bufs, b_bufs = _setup(a_desc, b_desc, 2 * BN, GROUP_M, NUM_BUF)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [2, BM, BN], c_desc.layout)
    ready = _barriers(NUM_BUF)
    empty = _barriers(NUM_BUF)
    go = _barriers(1).index(0)
    mma_layout: gl.constexpr = wgmma_layout(BM, BN, num_warps)
    gl.warp_specialize([
        (_pp_consumer, (a_bufs, b_bufs, ready, empty, go, c_desc, c_smem.index(0), off_m, off_n, k_tiles,
                        True, mma_layout)),
        (_pp_consumer, (a_bufs, b_bufs, ready, empty, go, c_desc, c_smem.index(1), off_m, off_n + BN,
                        k_tiles, False, mma_layout)),
        (_pp_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles)),
    ], [num_warps, 1], [232, 40])


KERNELS = {"pipe": pipe_kernel, "ws": ws_kernel, "split": split_kernel, "pp": pp_kernel}

# (kind, BM, BN, BK, NUM_BUF, warps, EPI)
# split: BN is the half tile (the program's tile is BM x 2*BN); reg-store variants are 9-10 us
# slower than TMA stores at 2048^3 (first run, November 28), so only TMA stores are kept
VARIANTS = [
    ("pipe", 128, 256, 64, 4, 8, 0), ("pipe", 256, 128, 64, 4, 8, 0), ("ws", 128, 256, 64, 4, 8, 0),
    ("pipe", 128, 256, 64, 3, 8, 0), ("pipe", 256, 128, 64, 3, 8, 0), ("pipe", 128, 256, 128, 2, 8, 0),
    ("split", 128, 128, 64, 4, 8, 0), ("split", 128, 128, 64, 5, 8, 0), ("split", 128, 128, 64, 6, 8, 0),
    ("split", 128, 128, 128, 3, 8, 0), ("split", 256, 128, 64, 4, 8, 0), ("split", 256, 64, 64, 4, 8, 0),
    ("split", 128, 64, 64, 6, 4, 0), ("split", 128, 128, 64, 4, 4, 0),
    ("pp", 128, 128, 64, 4, 4, 0), ("pp", 128, 128, 64, 5, 4, 0), ("pp", 128, 128, 128, 2, 4, 0),
    ("pp", 64, 256, 64, 4, 4, 0), ("pp", 64, 128, 64, 6, 4, 0), ("pp", 128, 128, 128, 3, 4, 0),
]


def label(v) -> str:
    kind, bm, bn, bk, nb, w, epi = v
    return f"{kind} {bm}x{bn}x{bk} buf{nb} w{w} {'tma-store' if epi == 0 else 'reg-store'}"


def prepared(v, a, b_col, out):
    """The kernel's launch with its descriptors built once: a call issues only the launch."""
    kind, bm, bn, bk, nb, w, epi = v
    bt = b_col.t()                               # (N, K), K contiguous: the layout INT8 wgmma reads
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk], gl.NVMMASharedLayout.get_default_for([bm, bk], gl.int8))
    b_desc = TensorDescriptor.from_tensor(bt, [bn, bk], gl.NVMMASharedLayout.get_default_for([bn, bk], gl.int8))
    c_desc = TensorDescriptor.from_tensor(out, [bm, bn], gl.NVMMASharedLayout.get_default_for([bm, bn], gl.int32))
    grid = (triton.cdiv(a.shape[0], bm) * triton.cdiv(bt.shape[0], bn * (2 if kind in ("split", "pp") else 1)), )
    kernel = KERNELS[kind]
    return lambda: kernel[grid](a_desc, b_desc, c_desc, out, out.stride(0), 8, nb, epi, num_warps=w)


def operands(m, n, k, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randint(-128, 128, (m, k), dtype=torch.int8, device="cuda", generator=g)
    b_col = torch.randint(-128, 128, (n, k), dtype=torch.int8, device="cuda", generator=g).t()
    return a, b_col


def check(i: int) -> None:
    v = VARIANTS[i]
    for m, n, k in ((2048, 2048, 2048), (384, 640, 320), (300, 520, 208)):
        a, b_col = operands(m, n, k, seed=i)
        out = torch.empty(m, n, dtype=torch.int32, device="cuda")
        prepared(v, a, b_col, out)()
        want = torch._int_mm(a, b_col.t().contiguous().t())
        if not torch.equal(out, want):
            print(f"MISMATCH {m}x{n}x{k}: {(out != want).sum().item()} elements differ")
            sys.exit(1)
    print("exact")


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", type=int, nargs="+", help="check and time only these variants (indices)")
    p.add_argument("--check", type=int, help=argparse.SUPPRESS)
    p.add_argument("--once", type=int, nargs="+", help="run these variants (and the package's kernel) a few "
                   "times at the first size, untimed: for Nsight Compute")
    args = p.parse_args()
    if args.check is not None:
        check(args.check)
        return
    if args.once:
        from gpudl.gemm import int8 as g8
        size = args.sizes[0]
        a, b_col = operands(size, size, size)
        out = torch.empty(size, size, dtype=torch.int32, device="cuda")
        for _ in range(3):
            for i in args.once:
                prepared(VARIANTS[i], a, b_col, out)()
            g8.int8_matmul_triton(a, b_col)
        torch.cuda.synchronize()
        print("ran", [label(VARIANTS[i]) for i in args.once])
        return
    good = []
    for i, v in enumerate(VARIANTS):
        if args.only and i not in args.only:
            continue
        try:
            r = subprocess.run([sys.executable, __file__, "--check", str(i)], capture_output=True, text=True,
                               timeout=90)
        except subprocess.TimeoutExpired:
            print(f"check {label(v)}: hung (killed after 90 s)", flush=True)
            continue
        tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or ["(no output)"]
        print(f"check {label(v)}: rc={r.returncode} {tail[0][:200]}", flush=True)
        if r.returncode == 0:
            good.append(v)
    from gpudl.gemm import int8 as g8
    for size in args.sizes:
        a, b_col = operands(size, size, size)
        ah, bh = a.half(), b_col.t().contiguous().t().half()
        out = torch.empty(size, size, dtype=torch.int32, device="cuda")
        calls = {label(v): prepared(v, a, b_col, out) for v in good}
        calls["package int8_matmul_triton"] = lambda: g8.int8_matmul_triton(a, b_col)
        ratios = {name: [] for name in calls}
        times = {name: [] for name in calls}
        for _ in range(args.rounds):
            fp16 = bench(lambda: torch.matmul(ah, bh))
            for name, fn in calls.items():
                t = bench(fn)
                times[name].append(t)
                ratios[name].append(fp16 / t)
        print(f"\n{size}^3 (FP16 last round {fp16 * 1e3:.2f} us)")
        for name in sorted(calls, key=lambda n: -statistics.median(ratios[n])):
            r = ratios[name]
            print(f"  {statistics.median(r):.3f}x  {statistics.median(times[name]) * 1e3:8.2f} us  "
                  f"rounds {' '.join(f'{x:.3f}' for x in r)}  {name}")


if __name__ == "__main__":
    main()
