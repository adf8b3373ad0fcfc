"""gpudl.gemm and lab 03's references (``gpudl_instructor.references.lab03``): every GEMM against
NumPy/torch, the traffic model against hand counts and the LRU simulation, the teaching kernel
and the tuned Triton GEMM (interpreter on a CPU, compiled and autotuned on a GPU), the benchmarks."""
from __future__ import annotations

import argparse
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudl import benchmarks, gemm
from gpudl.grading import assert_close, tolerance
from gpudl_instructor.references import lab03 as ref

CUDA = torch.cuda.is_available()


def _mats(m, k, n, seed=0, dtype=np.float64):
    g = np.random.default_rng(seed)
    return g.standard_normal((m, k)).astype(dtype), g.standard_normal((k, n)).astype(dtype)


# --- the loops -----------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6), st.sampled_from(gemm.LOOP_ORDERS))
def test_every_loop_order_is_a_matmul(m, k, n, order):
    A, B = _mats(m, k, n, seed=m * 100 + k * 10 + n)
    assert_close(ref.gemm_loops(A, B, order), A @ B, k=k)
    assert_close(ref.gemm_reference(A, B), A @ B, k=k)


def test_outer_products_are_a_matmul():
    A, B = _mats(7, 5, 3)
    assert_close(gemm.gemm_outer(A, B), A @ B, k=5)


def test_bad_shapes_say_what_is_wrong():
    A, B = _mats(3, 4, 5)
    with pytest.raises(ValueError, match="inner dimensions"):
        ref.gemm_reference(A, B.T)
    with pytest.raises(ValueError, match="order must be one of"):
        ref.gemm_loops(A, B, "iij")


# --- blocked GEMM --------------------------------------------------------------------------

@pytest.mark.parametrize("shape, block", [((33, 17, 45), 16), ((64, 64, 64), 16), ((64, 64, 64), 64),
                                          ((5, 7, 3), 100), ((1, 1, 1), 1), ((10, 12, 9), 1),
                                          ((40, 3, 64), (16, 8, 2)), ((17, 31, 13), (5, 7, 3))])
def test_blocked_matches_numpy_on_any_shape(shape, block):
    m, k, n = shape
    A, B = _mats(m, k, n)
    assert_close(ref.gemm_blocked(A, B, block), A @ B, k=k)


def test_blocked_keeps_float32_and_handles_empty_k():
    A, B = _mats(9, 6, 4, dtype=np.float32)
    C = ref.gemm_blocked(A, B, 4)
    assert C.dtype == np.float32
    assert_close(C, A.astype(np.float64) @ B, dtype="fp32", k=6)
    assert np.array_equal(ref.gemm_blocked(np.zeros((3, 0)), np.zeros((0, 2)), 4), np.zeros((3, 2)))


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.integers(1, 20))
def test_blocked_property(m, k, n, block):
    A, B = _mats(m, k, n, seed=block)
    assert_close(ref.gemm_blocked(A, B, block), A @ B, k=k)


# --- the traffic model (hand counts from seed 004) -------------------------------------------

def test_traffic_formulas_by_hand():
    # n = 64, b = 16: N = 4 blocks per side, (2*4 + 2) * 64^2 words
    assert ref.blocked_traffic(64, 16) == 40960
    # one tile: read A and B, read and write C
    assert ref.blocked_traffic(10, 64) == 4 * 100
    # 1x1 tiles: A and B read n times each
    assert ref.blocked_traffic(7, 1) == (2 * 7 + 2) * 49
    # not a multiple: N = ceil(100 / 30) = 4
    assert ref.blocked_traffic(100, 30) == 10 * 100 ** 2
    assert gemm.naive_traffic(32) == 32 ** 3 + 3 * 32 ** 2


def test_intensity_grows_like_the_block():
    q = ref.computational_intensity(1024, 32)
    assert q == pytest.approx(2 * 1024 ** 3 / (66 * 1024 ** 2))
    assert 30 < q < 32                                         # ~ n / N = b
    assert ref.computational_intensity(1024) == pytest.approx(2.0, rel=0.01)   # unblocked: ~2


@pytest.mark.parametrize("words, block", [(768, 16), (767, 15), (12288, 64), (3, 1), (11, 1), (12, 2),
                                          (3 * 1182 ** 2, 1182), (3 * 1182 ** 2 - 1, 1181)])
def test_optimal_block_is_the_largest_that_fits(words, block):
    b = ref.optimal_block(words)
    assert b == block
    assert 3 * b * b <= words < 3 * (b + 1) ** 2


def test_model_inputs_are_validated():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError):
            ref.blocked_traffic(bad, 4)
    with pytest.raises(ValueError, match="three tiles"):
        ref.optimal_block(2)


# --- the cache simulator ---------------------------------------------------------------------

def _trace(addresses, writes=None):
    addresses = np.asarray(addresses)
    return gemm.Trace(addresses, np.zeros(addresses.shape, bool) if writes is None else np.asarray(writes))


def test_lru_by_hand():
    # capacity 2 lines: 0 miss, 1 miss, 0 hit, 2 miss (evicts 1, the least recently used), 1 miss (evicts 0)
    s = gemm.simulate_traffic(_trace([0, 1, 0, 2, 1]), capacity_words=2, line_words=1)
    assert (s.misses, s.writebacks, s.words) == (4, 0, 4)
    # a written line is written back when evicted, and at the end
    s = gemm.simulate_traffic(_trace([0, 1, 2], [True, False, True]), capacity_words=2, line_words=1)
    assert (s.misses, s.writebacks) == (3, 2)
    # one line of 8 words: eight accesses, one fill
    s = gemm.simulate_traffic(_trace(np.arange(8)), capacity_words=8, line_words=8)
    assert (s.misses, s.words_read, s.accesses) == (1, 8, 8)


def test_simulator_validates_its_cache():
    with pytest.raises(ValueError, match="whole number of lines"):
        gemm.simulate_traffic(_trace([0]), capacity_words=10, line_words=4)
    with pytest.raises(ValueError):
        gemm.Trace(np.array([0, 1]), np.array([True]))


def test_naive_model_matches_the_simulation():
    n = 32
    s = gemm.simulate_traffic(gemm.loop_trace(n, "ijk"), capacity_words=2 * n + 8, line_words=1)
    assert s.words == gemm.naive_traffic(n)


@pytest.mark.parametrize("n", [64, 48])
@pytest.mark.parametrize("block", [4, 8, 16])
def test_blocked_model_within_10_percent_of_lru(n, block):
    """The acceptance criterion: with a cache sized for three tiles (and LRU's slack), lines that
    divide the block and n, the model is within 10% of the simulation (here: exact)."""
    rows = gemm.traffic_table(n, (block,), line_words=4, model=ref.blocked_traffic)
    assert rows[0]["simulated/model"] == pytest.approx(1.0, abs=0.10)


def test_traffic_table_without_a_model_simulates_only():
    rows = gemm.traffic_table(32, (4, 8), line_words=4)
    assert [r["block"] for r in rows] == [4, 8] and all("model words" not in r for r in rows)
    assert rows[0]["simulated words"] > rows[1]["simulated words"]      # bigger tiles move less


def test_model_is_an_upper_bound_for_larger_caches():
    for block in (4, 8):
        sim = gemm.simulate_traffic(gemm.blocked_trace(48, block), 2048, 4).words
        assert sim <= ref.blocked_traffic(48, block)


def test_tiles_that_do_not_fit_move_more_than_the_model():
    cache = gemm.lru_capacity_for_block(8, 4)
    sim = gemm.simulate_traffic(gemm.blocked_trace(48, 24), cache, 4).words
    assert sim > 1.5 * ref.blocked_traffic(48, 24)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=200), st.integers(1, 20), st.integers(1, 4))
def test_lru_misses_never_grow_with_capacity(addresses, lines, line_words):
    t = _trace(addresses)
    small = gemm.simulate_traffic(t, lines * line_words, line_words).misses
    large = gemm.simulate_traffic(t, (lines + 1) * line_words, line_words).misses
    assert large <= small


def test_loop_order_traffic_with_long_lines():
    words = {o: gemm.simulate_traffic(gemm.loop_trace(32, o), 256, 8).words for o in gemm.LOOP_ORDERS}
    assert min(words, key=words.get) == "ikj"           # inner loop along rows of B and C
    assert set(sorted(words, key=words.get)[-2:]) == {"jki", "kji"}   # inner loop down columns
    assert words["ikj"] == gemm.naive_traffic(32)       # whole lines used: as good as line size 1


def test_traces_cover_every_multiply_add():
    for order in gemm.LOOP_ORDERS:
        t = gemm.loop_trace(3, order, m=2, k=4)
        assert len(t) == 3 * 2 * 3 * 4
    t = gemm.blocked_trace(10, 4)
    fmas = 10 ** 3
    c_tiles = sum(min(4, 10 - i) * min(4, 10 - j) for i in range(0, 10, 4) for j in range(0, 10, 4))
    assert len(t) == 2 * fmas + 2 * c_tiles * 3          # C read + written once per (C entry, k tile)


# --- batched GEMM -----------------------------------------------------------------------------

def test_batched_versions_agree_numpy():
    g = np.random.default_rng(0)
    A, B = g.standard_normal((50, 3, 4)), g.standard_normal((50, 4, 5))
    want = np.stack([a @ b for a, b in zip(A, B)])
    for fn in (gemm.gemm_batched_loop, gemm.gemm_batched, ref.gemm_batched_outer):
        assert_close(fn(A, B), want, k=4)


def test_batched_versions_agree_torch():
    A, B = torch.randn(20, 3, 4, dtype=torch.float64), torch.randn(20, 4, 2, dtype=torch.float64)
    want = torch.bmm(A, B)
    assert_close(gemm.gemm_batched_loop(A, B), want, k=4)
    assert_close(gemm.gemm_batched(A, B), want, k=4)
    with pytest.raises(ValueError, match="batch"):
        gemm.gemm_batched(A, B[:10])


# --- the Triton kernel --------------------------------------------------------------------------

def _close_fp(got, a, b):
    k = a.shape[1]
    want = a.double().cpu() @ b.double().cpu()
    rtol, atol = tolerance("fp32", k)
    eps = {torch.float16: 2 ** -11, torch.bfloat16: 2 ** -8, torch.float32: 2 ** -24}[got.dtype]
    assert_close(got.double().cpu(), want, rtol=eps + rtol, atol=atol)   # FP32 sums, one rounding


DEV = "cuda" if CUDA else "cpu"


@pytest.mark.parametrize("shape", [(33, 17, 45), (64, 64, 64), (1, 1, 1), (16, 100, 3), (50, 33, 70)])
@pytest.mark.parametrize("config", [gemm.TritonConfig(16, 16, 16, 2), gemm.TritonConfig(32, 16, 32, 3)])
def test_triton_matches_torch_on_edges(shape, config):
    m, k, n = shape
    g = torch.Generator().manual_seed(m + k + n)
    a = torch.randn(m, k, generator=g).half().to(DEV)
    b = torch.randn(k, n, generator=g).half().to(DEV)
    c = gemm.matmul_triton(a, b, config=config)
    assert c.dtype == torch.float16 and tuple(c.shape) == (m, n)
    _close_fp(c, a, b)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_triton_default_config_keeps_dtype(dtype):
    if dtype == torch.bfloat16 and not CUDA:
        with pytest.raises(TypeError, match="interpreter cannot multiply bfloat16"):
            gemm.matmul_triton(torch.zeros(2, 2, dtype=dtype), torch.zeros(2, 2, dtype=dtype))
        return
    g = torch.Generator().manual_seed(1)
    a = torch.randn(40, 50, generator=g).to(dtype).to(DEV)
    b = torch.randn(50, 30, generator=g).to(dtype).to(DEV)
    c = gemm.matmul_triton(a, b)
    assert c.dtype == dtype
    _close_fp(c, a, b)


def test_triton_follows_strides_and_writes_only_out():
    g = torch.Generator().manual_seed(2)
    big = torch.randn(60, 80, generator=g).half().to(DEV)
    a = big[5:38, 3:20]                     # (33, 17), row stride 80
    b = torch.randn(45, 17, generator=g).half().to(DEV).t()    # (17, 45), column-major
    buf = torch.full((50, 70), float("nan"), dtype=torch.float16, device=DEV)
    out = buf[8:41, 8:53]
    gemm.matmul_triton(a, b, out=out, config=gemm.TritonConfig(16, 16, 16, 2))
    _close_fp(out, a, b)
    outside = buf.clone()
    outside[8:41, 8:53] = 0
    assert torch.isnan(outside).sum().item() == buf.numel() - 33 * 45


def test_triton_long_k_is_accumulated_in_fp32():
    g = torch.Generator().manual_seed(3)
    a = torch.rand(33, 512, generator=g).half().to(DEV)
    b = torch.rand(512, 20, generator=g).half().to(DEV)
    _close_fp(gemm.matmul_triton(a, b, config=gemm.TritonConfig(16, 16, 16, 2)), a, b)


def test_teaching_kernel_follows_strides_and_writes_only_c():
    """The reference of lab 03's Triton exercise: edges, a column-major B, views with long rows."""
    g = torch.Generator().manual_seed(5)
    big = torch.randn(60, 80, generator=g).half().to(DEV)
    a = big[5:38, 3:20]                     # (33, 17), row stride 80
    b = torch.randn(45, 17, generator=g).half().to(DEV).t()    # (17, 45), column-major
    buf = torch.full((50, 70), float("nan"), dtype=torch.float16, device=DEV)
    out = buf[8:41, 8:53]
    assert ref.triton_matmul(a, b, out, 16, 16, 16, 2) is out
    _close_fp(out, a, b)
    outside = buf.clone()
    outside[8:41, 8:53] = 0
    assert torch.isnan(outside).sum().item() == buf.numel() - 33 * 45
    a = torch.rand(20, 300, generator=g).half().to(DEV)
    b = torch.rand(300, 17, generator=g).half().to(DEV)
    _close_fp(ref.triton_matmul(a, b, torch.empty(20, 17, dtype=torch.float16, device=DEV), 16, 16, 32, 3), a, b)


def test_triton_validates():
    a = torch.zeros(4, 5, dtype=torch.float16)
    with pytest.raises(ValueError, match="inner dimensions"):
        gemm.matmul_triton(a, a)
    with pytest.raises(TypeError, match="share a dtype"):
        gemm.matmul_triton(a, torch.zeros(5, 4))
    with pytest.raises(ValueError, match="power of two"):
        gemm.TritonConfig(24, 16, 16)
    assert torch.equal(gemm.matmul_triton(torch.zeros(3, 0).half(), torch.zeros(0, 2).half()),
                       torch.zeros(3, 2).half())


@pytest.mark.parametrize("entry", ["matmul_triton", "int8_matmul_triton"])
def test_triton_entry_points_refuse_cpu_tensors_when_kernels_are_compiled(entry, monkeypatch):
    """Without the interpreter a Triton kernel runs on a GPU only: CPU tensors get a clear error
    before anything touches a device (not torch's "Invalid device id" from the autotuner)."""
    from gpudl.gemm import int8 as G8

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    if entry == "matmul_triton":
        a = torch.zeros(32, 32, dtype=torch.float16)
        call = lambda: gemm.matmul_triton(a, a)                   # noqa: E731
    else:
        a = torch.zeros(32, 32, dtype=torch.int8)
        call = lambda: G8.int8_matmul_triton(a, a)                # noqa: E731
    with pytest.raises(ValueError, match="CUDA tensors only; got cpu tensors.*TRITON_INTERPRET"):
        call()


def test_triton_config_validates_clusters():
    assert gemm.TritonConfig(256, 64, 64, num_ctas=2).label == "256x64x64 cluster 2"
    with pytest.raises(ValueError, match="num_ctas"):
        gemm.TritonConfig(128, 64, 64, num_ctas=3)
    if not CUDA:
        a = torch.zeros(32, 32, dtype=torch.float16)
        with pytest.raises(ValueError, match="clusters"):
            gemm.matmul_triton(a, a, config=gemm.TritonConfig(64, 32, 32, num_ctas=2))


def test_lean_path_launches_the_kept_plan_only_for_its_signature(monkeypatch):
    """A repeated call goes straight to the launch kept for its signature; any other call (other
    strides, an unaligned base, ``out`` given) takes the long way; a plan that fails is dropped."""
    from gpudl import _launch
    from gpudl.gemm import triton_kernel as GK

    g = torch.Generator().manual_seed(4)
    dev = "cuda" if CUDA else "cpu"                                # CPU tensors: Triton's interpreter
    a = torch.randn(24, 40, generator=g).half().to(dev)
    b = torch.randn(40, 16, generator=g).half().to(dev)
    used = []

    def plan(a_, b_, out):                  # stands in for the compiled kernel's launch
        used.append((a_.data_ptr(), b_.data_ptr()))
        out.fill_(7)
    monkeypatch.setattr(GK, "_PLANS", {GK._signature(a, b): plan})
    assert torch.equal(gemm.matmul_triton(a, b), torch.full((24, 16), 7.0, dtype=torch.float16, device=dev))
    assert used == [(a.data_ptr(), b.data_ptr())]
    a2 = torch.randn(24, 40, generator=g).half().to(dev)         # same signature, other data
    assert torch.equal(gemm.matmul_triton(a2, b), torch.full((24, 16), 7.0, dtype=torch.float16, device=dev))
    assert len(used) == 2
    _close_fp(gemm.matmul_triton(a.t().contiguous().t(), b), a, b)    # other strides
    _close_fp(gemm.matmul_triton(a, b, out=torch.empty(24, 16, dtype=torch.float16, device=dev)), a, b)
    buf = torch.randn(24 * 40 + 1, generator=g).half().to(dev)
    unaligned = buf[1:].view(24, 40)                                # base 2 bytes past a 16-byte line
    assert unaligned.data_ptr() % 16 and GK._signature(unaligned, b) in GK._PLANS
    _close_fp(gemm.matmul_triton(unaligned, b), unaligned, b)
    assert len(used) == 2
    assert GK._signature([[1.0]], b) is None

    def broken(a_, b_, out):
        raise RuntimeError("this Triton launches compiled kernels otherwise")
    monkeypatch.setattr(GK, "_PLANS", {GK._signature(a, b): broken})
    monkeypatch.setattr(_launch, "RELAUNCH", _launch.RELAUNCH)     # give_up() turns it off; restored after
    _close_fp(gemm.matmul_triton(a, b), a, b)                      # the long way, still right
    assert GK._PLANS == {} and _launch.RELAUNCH is False


@pytest.mark.slow
@pytest.mark.skipif(not CUDA, reason="the autotuned kernel runs on a GPU")
@pytest.mark.parametrize("n", [512, 1000])
def test_triton_autotuned_on_gpu(n):
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    _close_fp(gemm.matmul_triton(a, b), a, b)
    assert gemm.best_triton_config(n, n, n) is not None


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="the persistent TMA kernel and the relaunch run compiled kernels")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_triton_tma_kernel_and_relaunch_on_gpu(dtype):
    a = torch.randn(300, 264, device="cuda", dtype=dtype)
    b = torch.randn(264, 136, device="cuda", dtype=dtype)
    tma = gemm.TritonConfig(64, 128, 64, 8, num_warps=4, num_stages=3, tma=True)
    if torch.cuda.get_device_capability()[0] >= 9:
        for _ in range(3):                               # first through the JIT, then relaunched
            c = torch.full((300, 136), float("nan"), device="cuda", dtype=dtype)
            _close_fp(gemm.matmul_triton(a, b, config=tma, out=c), a, b)
    first = gemm.matmul_triton(a, b)                     # autotuned over TRITON_CONFIGS
    from gpudl.gemm import triton_kernel as GK
    assert GK._signature(a, b) in GK._PLANS              # kept for the lean path...
    assert torch.equal(gemm.matmul_triton(a, b), first)  # ...which gives the same result
    _close_fp(first, a, b)
    a2 = torch.randn(300, 264, device="cuda", dtype=dtype)
    _close_fp(gemm.matmul_triton(a2, b), a2, b)          # the same plan, other data
    bt = b.t().contiguous().t()
    _close_fp(gemm.matmul_triton(a, bt), a, bt)          # other strides: a plan of its own
    with pytest.raises(ValueError, match="TMA|tma"):
        gemm.matmul_triton(a[:, 1:], b[1:], config=tma)  # rows not 16-byte aligned: not for TMA


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="times the kernel against cuBLAS on a GPU")
def test_triton_vs_torch_times_calls_and_graph_replays_on_gpu():
    r = gemm.triton_vs_torch(512, "fp16", budget_s=0.3, rounds=3, warm_s=0.1)
    assert r["max rel err"] < 1e-2 and r["config"]
    assert 0 < r["triton TFLOP/s"] and 0 < r["cuBLAS TFLOP/s"]
    assert len(r["round ratios"]) == 3 and r["ratio"] == sorted(r["round ratios"])[1]     # the paired median
    assert 0.05 < r["kernel ratio"] < 20                 # both graphs replayed real work


# --- the grader's view of the loop orders, and the benchmark ---------------------------------------

def test_loop_order_reads_tell_all_six_orders_apart():
    from gpudl.grading.lab03 import _expected_reads

    seen = {o: _expected_reads(3, 4, 2, o) for o in gemm.LOOP_ORDERS}
    assert len({repr(v) for v in seen.values()}) == 6


def _bench(module, argv):
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    module.add_arguments(p)
    return module.run(p.parse_args(argv))


@pytest.mark.slow
def test_course_benchmark_runs():
    from gpudl.benchmarks import gemm as bench

    table = _bench(bench, ["--quick", "--budget", "0.2"])
    batched = [r for r in table.rows if r["section"] == "batched cpu"]
    assert len(batched) == 2 and all(r["value"] > 0 for r in batched)
    assert not [r for r in table.rows if r["section"] in ("cpu blocked", "traffic")]     # lab 03's answers


@pytest.mark.slow
def test_benchmark_runs_and_the_model_holds():
    """The instructor's `gpudl bench gemm`: lab 03's references measured, then the course's rows."""
    table = benchmarks.run("gemm", ["--quick", "-n", "256", "--rounds", "1", "--budget", "0.2"])
    traffic = [r for r in table.rows if r["section"] == "traffic"]
    assert len(traffic) >= 4
    assert all(abs(r["simulated / model"] - 1) <= 0.10 for r in traffic)
    blocked = [r for r in table.rows if r["section"] == "cpu blocked"]
    assert all(r["value"] > 0 for r in blocked)
    assert math.isfinite(blocked[0]["time / np.matmul"])
    assert [r for r in table.rows if r["section"] == "batched cpu"]
