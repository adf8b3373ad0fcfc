"""gpudl.collectives and lab 10's references (``gpudl_instructor.references.lab10``): the cost
models, the hand-written ring collectives against torch's on gloo (world sizes 2, 3, 4; sizes not
divisible by k), their bytes against the model, bucketing against DDP's own, data-parallel training
(by hand, and the course edition's DDP) against one process, and the launcher (errors by rank,
deadlocks within the limit, the environment, notebook functions).

Each world size is one launch that runs every case inside the workers and returns plain
records; the assertions are made here. The GPU tests (NCCL, one process per GPU) skip with a
reason on a machine with fewer than 2 GPUs.
"""
from __future__ import annotations

import os
import signal
import time

import pytest
import torch
import torch.distributed as dist
from hypothesis import given, settings, strategies as st

from gpudl import benchmarks
from gpudl.collectives import measure

from gpudl.collectives import (LECTURE_EXAMPLE, SCALING_TABLE, TrainConfig, WorkerError, WorkerTimeout, chunk_bounds,
                               gpu_hours, images_per_second, launch, ring_broadcast_schedule, scaling_rows, traffic,
                               train_ddp, train_single, tree_all_reduce_time)
from gpudl_instructor.references.lab10 import (bus_bandwidth, bus_bandwidth_factor, bytes_per_rank, data_parallel_step,
                                               optimal_chunks, plan_buckets, ring_all_gather, ring_all_reduce,
                                               ring_all_reduce_time, ring_broadcast, ring_broadcast_steps,
                                               ring_broadcast_time, ring_bytes_sent, ring_reduce_scatter,
                                               ring_reduce_scatter_time, train_data_parallel)

SIZES = (1, 5, 7, 12, 13)       # below k, divisible by some k, not by others
GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
gpu = pytest.mark.gpu


# --- cost models ----------------------------------------------------------------------------------

def test_ring_broadcast_reproduces_the_lecture():
    n, k, b = LECTURE_EXAMPLE["n_bytes"], LECTURE_EXAMPLE["k"], LECTURE_EXAMPLE["bandwidth"]
    assert ring_broadcast_time(n, k, b) == pytest.approx((k - 1) * n / b)          # (k - 1) N / B
    assert ring_broadcast_time(n, k, b) == pytest.approx(0.025)                      # 3 x 100 MB / 12 GB/s
    for s in (1, 2, 10, 100):
        assert ring_broadcast_time(n, k, b, chunks=s) == pytest.approx(n * (s + k - 2) / (s * b))
    assert ring_broadcast_time(n, k, b, chunks=10**6) == pytest.approx(n / b, rel=1e-5)   # -> N / B


def test_optimal_chunks_is_the_brute_force_minimum():
    for n, k, b, alpha in [(100e6, 4, 12e9, 10e-6), (1e6, 8, 100e9, 5e-6), (64e6, 16, 300e9, 2e-6),
                           (10e3, 3, 1e9, 1e-3)]:
        brute = min(range(1, 20000), key=lambda s: ring_broadcast_time(n, k, b, s, alpha))
        assert ring_broadcast_time(n, k, b, optimal_chunks(n, k, b, alpha), alpha) == pytest.approx(
            ring_broadcast_time(n, k, b, brute, alpha))
    assert optimal_chunks(1e8, 2, 1e10, 1e-5) == 1
    with pytest.raises(ValueError):
        optimal_chunks(1e8, 4, 1e10, 0.0)


def test_schedule_has_s_plus_k_minus_2_steps_and_each_chunk_reaches_every_rank():
    for k, s, src in [(4, 1, 0), (4, 5, 2), (5, 3, 4), (2, 4, 1)]:
        sched = ring_broadcast_schedule(k, s, src)
        assert max(step for step, *_ in sched) + 1 == s + k - 2 == ring_broadcast_steps(k, s)
        assert [step for step, *_ in sched] == sorted(step for step, *_ in sched)
        for c in range(s):
            receivers = {dst for _, _, dst, chunk in sched if chunk == c}
            assert receivers == set(range(k)) - {src}
        for step, sender, dst, c in sched:           # a rank forwards a chunk only after receiving it
            assert sender == src or any(d == sender and ch == c and st_ < step for st_, _, d, ch in sched)


def test_all_reduce_and_tree_models():
    n, b = 256e6, 100e9
    for k in (2, 4, 8):
        assert ring_all_reduce_time(n, k, b) == pytest.approx(2 * (k - 1) / k * n / b)
        assert ring_all_reduce_time(n, k, b) == pytest.approx(2 * ring_reduce_scatter_time(n, k, b))
    assert ring_all_reduce_time(n, 8, b, latency=1e-5) - ring_all_reduce_time(n, 8, b) == pytest.approx(14e-5)
    # small messages at scale: the tree's log2 k latency wins; large ones: the ring's bandwidth
    assert tree_all_reduce_time(1e3, 64, b, 1e-5) < ring_all_reduce_time(1e3, 64, b, 1e-5)
    assert ring_all_reduce_time(1e9, 64, b, 1e-5) < tree_all_reduce_time(1e9, 64, b, 1e-5, chunks=64)


def test_bus_bandwidth_factors_are_nccl_tests():
    assert bus_bandwidth_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_bandwidth_factor("all_gather", 4) == pytest.approx(3 / 4)
    assert bus_bandwidth_factor("reduce_scatter", 2) == pytest.approx(1 / 2)
    assert bus_bandwidth_factor("broadcast", 8) == 1.0
    assert bus_bandwidth("all_reduce", 1e9, 0.01, 2) == pytest.approx(1e11)
    with pytest.raises(ValueError):
        bus_bandwidth_factor("alltoall", 2)


@pytest.mark.parametrize("k", [2, 3, 4, 8])
def test_byte_model_exact_counts_agree_with_the_formula(k):
    for numel in (k * 5, k * 7 + 3, 1):
        exact = ring_bytes_sent("all_reduce", numel, k, element_size=4)
        if numel % k == 0:
            assert exact == [bytes_per_rank("all_reduce", 4 * numel, k)] * k
        parts = sum(ring_bytes_sent("reduce_scatter", numel, k)) + sum(ring_bytes_sent("all_gather", numel, k))
        assert sum(exact) == parts
        assert sum(ring_bytes_sent("broadcast", numel, k)) == (k - 1) * numel * 4


def test_scaling_table():
    he, mikami = SCALING_TABLE[0], SCALING_TABLE[-1]
    assert images_per_second(he) == pytest.approx(90 * 1_281_167 / (29 * 3600))
    assert gpu_hours(he) == pytest.approx(8 * 29)
    assert gpu_hours(mikami) == pytest.approx(2176 * 224 / 3600)
    rows = scaling_rows()
    assert rows[-1]["speedup"] == pytest.approx(29 * 3600 / 224)
    assert rows[2]["proc_hours"] is None                        # "full TPU Pod": no count


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5000), max_size=30), st.integers(1, 8000))
def test_plan_buckets_reverse_order_and_ddp_size_rule(sizes, cap):
    buckets = plan_buckets(sizes, cap)
    flat = [i for b in buckets for i in b]
    assert flat == list(reversed(range(len(sizes))))                # each once, last parameter first
    for b in buckets[:-1]:
        assert sum(sizes[i] for i in b) >= cap                      # closed once it reaches the cap
    for b in buckets:
        assert sum(sizes[i] for i in b[:-1]) < cap                  # and not before


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 5000), min_size=1, max_size=30), st.integers(1, 8000))
def test_ddp_bucketing_the_visible_check_uses_is_plan_buckets(sizes, cap):
    """The visible plan_buckets check asks torch's DDP bucketing; the hidden one the reference."""
    from gpudl.grading import lab10 as check
    assert check._ddp_buckets(sizes, cap=cap) == plan_buckets(sizes, cap)


def test_chunk_bounds_match_tensor_split():
    for n in range(0, 15):
        for k in range(1, 6):
            got = [b - a for a, b in chunk_bounds(n, k)]
            assert got == [t.numel() for t in torch.tensor_split(torch.arange(n), k)]


# --- hand-written collectives against torch's, on gloo -----------------------------------------------

def _torch_all_gather(tensor: torch.Tensor, k: int, rank: int) -> torch.Tensor:
    """torch's all-gather of uneven chunks: pad each to the longest, gather, trim."""
    bounds = chunk_bounds(tensor.numel(), k)
    longest = max(b - a for a, b in bounds)
    a, b = bounds[rank]
    mine = torch.zeros(longest, dtype=tensor.dtype, device=tensor.device)
    mine[:b - a] = tensor[a:b]
    parts = [torch.empty_like(mine) for _ in range(k)]
    dist.all_gather(parts, mine)
    return torch.cat([p[:e - s] for p, (s, e) in zip(parts, bounds)])


def _compare_collectives(rank: int, k: int, sizes, device: str = "cpu") -> list[dict]:
    """Run each hand-written collective and torch's on the same inputs; plain records."""
    dev = torch.device(device if device == "cpu" else f"cuda:{rank}")
    records = []
    for numel in sizes:
        gen = torch.Generator().manual_seed(1000 * numel + rank)
        x = torch.randint(-50, 50, (numel,), generator=gen).to(torch.float32).to(dev)   # exact sums
        xr = torch.randn(numel, generator=gen, dtype=torch.float64).to(dev)
        for name in ("broadcast", "reduce_scatter", "all_gather", "all_reduce"):
            more = numel + 2 if numel < 100 else 64          # more pieces than elements, where it is cheap
            for chunks, src in ([(1, 0), (3, k - 1), (more, 1 % k)] if name == "broadcast" else [(None, 0)]):
                mine, ref = x.clone(), x.clone()
                with traffic() as seen:
                    if name == "broadcast":
                        sent = ring_broadcast(mine, src=src, chunks=chunks)
                    elif name == "reduce_scatter":
                        sent = ring_reduce_scatter(mine)
                    elif name == "all_gather":
                        sent = ring_all_gather(mine)
                    else:
                        sent = ring_all_reduce(mine)
                if name == "broadcast":
                    dist.broadcast(ref, src)
                    got, want = mine, ref
                elif name == "reduce_scatter":
                    dist.all_reduce(ref)
                    a, b = chunk_bounds(numel, k)[rank]
                    got, want = mine[a:b], ref[a:b]
                    if numel % k == 0:                      # torch's own reduce_scatter, where it takes even chunks
                        out = torch.empty(numel // k, dtype=x.dtype, device=dev)
                        dist.reduce_scatter(out, list(torch.tensor_split(x.clone(), k)))
                        assert torch.equal(out, want)
                elif name == "all_gather":
                    got, want = mine, _torch_all_gather(x, k, rank)
                else:
                    dist.all_reduce(ref)
                    got, want = mine, ref
                kinds = [op for op, _, nbytes in seen.log if nbytes]
                pipelined = "send" not in kinds or "recv" not in kinds or (
                    kinds.index("send") < len(kinds) - 1 - kinds[::-1].index("recv"))
                records.append({"name": name, "numel": numel, "chunks": chunks, "src": src, "rank": rank,
                                "equal": bool(torch.equal(got.cpu(), want.cpu())), "sent": sent,
                                "measured": seen.sent_bytes, "collectives": sum(seen.calls.values()),
                                "sends": seen.sends, "pipelined": pipelined})
        mine, ref = xr.clone(), xr.clone()
        ring_all_reduce(mine)
        dist.all_reduce(ref)
        records.append({"name": "all_reduce_float64", "numel": numel, "rank": rank,
                        "equal": bool(torch.allclose(mine.cpu(), ref.cpu(), rtol=1e-12, atol=1e-12))})
    return records


def _assert_records(records_by_rank: list[list[dict]], k: int) -> None:
    for records in records_by_rank:
        for r in records:
            assert r["equal"], f"{r['name']} differs from torch's on k={k}: {r}"
            if "sent" not in r:
                continue
            model = ring_bytes_sent(r["name"], r["numel"], k, element_size=4, src=r["src"])[r["rank"]]
            assert r["sent"] == r["measured"] == model, f"bytes: {r} vs model {model}"
            assert r["collectives"] == 0, f"{r['name']} called a collective of the process group"
            if r["name"] == "broadcast":
                pieces = sum(b > a for a, b in chunk_bounds(r["numel"], r["chunks"]))
                assert r["sends"] == (pieces if r["sent"] else 0)     # one message per chunk
                assert r["pipelined"] or pieces < 2, f"a rank received every chunk before forwarding one: {r}"
            if r["name"] == "all_reduce" and r["numel"] % k == 0:
                assert r["sent"] == 2 * (k - 1) / k * r["numel"] * 4


@pytest.mark.parametrize("k", [2, 3, 4])
def test_ring_collectives_equal_torch_on_gloo(k):
    _assert_records(launch(_compare_collectives, k, SIZES, backend="gloo", timeout=60), k)


def test_single_rank_collectives_are_no_ops():
    out = launch(_compare_collectives, 1, (3,), backend="gloo")
    assert all(r["equal"] and r.get("sent", 0) == 0 for r in out[0])


# --- data-parallel training -----------------------------------------------------------------------

def _train_all_modes(rank: int, k: int, cfg: TrainConfig) -> dict:
    return {mode: train_data_parallel(rank, k, cfg, mode) for mode in ("ring", "torch", "ddp")} | {
        "no_overlap": train_data_parallel(rank, k, cfg, "ring", overlap=False),
        "course_ddp": {"params": train_ddp(rank, k, cfg)}, "step": {"params": _steps_by_hand(rank, k, cfg)}}


def _steps_by_hand(rank: int, k: int, cfg: TrainConfig) -> torch.Tensor:
    """Lab 10's data_parallel_step (the reference), step after step, on the plan of plan_buckets."""
    from gpudl.collectives import flat_params, make_batch, make_model, shard, worker_device
    model = make_model(cfg, worker_device())
    buckets = plan_buckets([p.numel() * p.element_size() for p in model.parameters()], int(cfg.bucket_mb * 2**20))
    history = []
    for step in range(cfg.steps):
        x, y = make_batch(cfg, step, worker_device())
        data_parallel_step(model, shard(x, rank, k), shard(y, rank, k), cfg.lr, buckets)
        history.append(flat_params(model))
    return torch.stack(history)


@pytest.mark.parametrize("k", [2, 3])
def test_data_parallel_equals_one_process_on_the_whole_batch(k):
    cfg = TrainConfig(batch=12, steps=3)
    single = train_single(cfg)
    runs = launch(_train_all_modes, k, cfg, backend="gloo", timeout=90, preload=("torch._dynamo",))
    for rank, modes in enumerate(runs):
        for mode, run in modes.items():
            assert run["params"].shape == single.shape
            torch.testing.assert_close(run["params"], single, rtol=1e-10, atol=1e-12,
                                       msg=lambda m: f"{mode} on rank {rank} of {k}: {m}")
            if mode in ("ring", "torch", "no_overlap"):
                n = len(run["buckets"])
                assert n >= 3, "the tiny bucket cap should give several buckets"
                assert run["order"] == list(range(n))    # bucket 0 holds the last layers, ready first


def test_buckets_are_reduced_during_backward():
    """With overlap, the buckets of the later layers are all-reduced while backward is still
    working on the first layer; without, none is before backward ends."""
    def probe(rank, k, overlap):
        from gpudl.collectives import make_batch, make_model
        from gpudl_instructor.references.lab10 import GradientBuckets
        cfg = TrainConfig()
        model = make_model(cfg)
        buckets = GradientBuckets(list(model.parameters()), cfg.bucket_mb, overlap=overlap)
        x, y = make_batch(cfg, 0)
        hidden = model[0](x)                       # the first layer's output: its gradient comes
        seen = []                                  # after the later layers' weights' gradients
        hidden.register_hook(lambda g: seen.append(len(buckets.reduced)))
        torch.nn.functional.mse_loss(model[1:](hidden), y).backward()
        buckets.synchronize()
        return seen[0], len(buckets.buckets)
    (during, n), (without, _) = launch(probe, 2, True)[0], launch(probe, 2, False)[0]
    assert 0 < during < n
    assert without == 0


# --- the launcher -------------------------------------------------------------------------------------

def _fail_on(rank: int, k: int, bad: int) -> int:
    if rank == bad:
        raise ValueError(f"rank {rank} cannot go on")
    dist.barrier()
    return rank


def test_launcher_names_the_failing_rank():
    with pytest.raises(WorkerError) as info:
        launch(_fail_on, 3, 2, timeout=30)
    assert info.value.rank == 2 and info.value.exc_type == "ValueError"
    assert str(info.value).startswith("rank 2 of 3 raised ValueError: rank 2 cannot go on")


def _ring_one_rank_reversed(rank: int, k: int) -> None:
    left, right = (rank - 1) % k, (rank + 1) % k
    if rank == 1:
        left, right = right, left
    out, into = torch.ones(4), torch.empty(4)
    dist.send(out, right)       # blocking: each rank waits for its receiver
    dist.recv(into, left)


def test_launcher_stops_a_deadlocked_ring_within_its_timeout():
    start = time.monotonic()
    with pytest.raises(WorkerTimeout) as info:
        launch(_ring_one_rank_reversed, 3, timeout=3)
    elapsed = time.monotonic() - start
    assert info.value.ranks and info.value.joined
    assert "did not finish within 3 s" in str(info.value) and "deadlock" in str(info.value)
    assert elapsed < 3 + 15, f"took {elapsed:.1f} s to give up"
    assert launch(_fail_on, 2, -1) == [0, 1]          # and the next launch works


def _suicide(rank: int, k: int) -> None:
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()


def test_launcher_reports_a_killed_rank():
    with pytest.raises(WorkerError) as info:
        launch(_suicide, 2, timeout=30)
    assert info.value.rank == 1 and info.value.exitcode == -signal.SIGKILL
    assert "killed by signal SIGKILL" in str(info.value)


def test_launcher_runs_a_function_defined_in_a_notebook_cell():
    ns = {"__name__": "__main__"}
    exec("import torch, torch.distributed as dist\n"
         "SCALE = 3\n"
         "def helper(x):\n    return x * SCALE\n"
         "def cell_fn(rank, k):\n    t = torch.tensor([float(rank)])\n    dist.all_reduce(t)\n"
         "    return helper(t.item())\n", ns)
    assert launch(ns["cell_fn"], 3) == [3 * 3.0] * 3


def test_spawn_start_works_too():
    assert launch(_fail_on, 2, -1, start="spawn", timeout=30) == [0, 1]


def _environment(rank: int, k: int) -> dict:
    print(f"hello from {rank}")
    print("a warning", file=__import__("sys").stderr)
    return dict(os.environ)


def test_launcher_passes_the_environment_unchanged_and_keeps_stderr(monkeypatch, capsys):
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        monkeypatch.setenv(name, "0" if name == "NCCL_NVLS_ENABLE" else "1")
    monkeypatch.setenv("GPUDL_TEST_ODD", "a b=c;\n'd'")
    envs = launch(_environment, 2)
    assert envs == [dict(os.environ)] * 2
    out = capsys.readouterr()
    assert "[rank 0] hello from 0" in out.out and "[rank 1] hello from 1" in out.out
    assert "a warning" not in out.err + out.out


def test_launcher_rejects_bad_arguments():
    with pytest.raises(ValueError):
        launch(_fail_on, 0, -1)
    with pytest.raises(ValueError):
        launch(_fail_on, 2, -1, backend="mpi")
    with pytest.raises(TypeError):
        launch(_fail_on, 2, (i for i in range(3)))    # a generator cannot be pickled
    with pytest.raises(TypeError):
        launch([1, 2, 3], 2)                          # not a function
    with pytest.raises(ValueError):
        launch(_fail_on, 5000, -1)                    # thousands of processes: a mistake, never started


# --- measurements and the benchmark -----------------------------------------------------------------

def test_measurements_give_every_rank_the_same_calls():
    per_rank = launch(measure.all_reduce_times, 2, [256, 4096], ring_all_reduce, 2, 1)
    assert len(per_rank) == 2 and all(len(r) == 2 and min(r) > 0 for r in per_rank)
    assert measure.slowest(per_rank) == [max(a, b) for a, b in zip(*per_rank)]
    assert measure.slowest([{"x": 1.0}, {"x": 3.0}]) == {"x": 3.0}
    with pytest.raises(ValueError):
        measure.all_reduce_times(0, 1, [256], "ring")
    steps = launch(measure.ddp_step_times, 2, (8, 16, 4), 8, ("compute", "no_overlap", "ddp"), 2, 1,
                   preload=("torch._dynamo",))
    assert all(set(r) == {"compute", "no_overlap", "ddp"} and min(r.values()) > 0 for r in steps)


@pytest.mark.slow
def test_the_ring_model_is_fitted_at_the_ends_and_takes_a_known_link():
    from gpudl_instructor.benchmarks.collectives import fit_ring_model

    # k = 4: 2 (k - 1) = 6 alphas; 2 (k - 1) / k = 1.5 N / B
    # times of a link of 1e11 B/s and alpha 1 us at both ends: both recovered
    assert fit_ring_model([1000, 10**9], [6e-6 + 1.5 * 1000 / 1e11, 6e-6 + 1.5 * 1e9 / 1e11], 4, None) == \
        pytest.approx((1e11, 1e-6))
    bandwidth, alpha = fit_ring_model([1000, 10**9], [6e-6 + 1.5e-8, 1.0], 4, 1e11)   # NVLink known: kept
    assert bandwidth == 1e11 and alpha == pytest.approx(1e-6)
    assert fit_ring_model([1000, 2000], [1e-9, 1.0], 2, 1e6)[1] == 0.0                    # never negative


def test_benchmark_quick_runs_on_gloo():
    table = benchmarks.run("collectives", ["--quick"])
    sizes = [r for r in table.rows if r["what"] == "all-reduce"]
    assert [r["bytes"] for r in sizes] == [2**10, 2**12, 2**14, 2**16, 2**18, 2**20]
    assert all(r["torch_busbw_GBps"] > 0 and r["ring_busbw_GBps"] > 0 for r in sizes)
    for r in sizes:      # k = 2: busbw = algbw
        assert r["torch_busbw_GBps"] == pytest.approx(r["torch_algbw_GBps"])
    # the lecture's model meets the ring at both ends (fitted there; at the largest only when the
    # ring took longer there: gloo's times on a busy CPU can be flat) and grows with the message
    assert sizes[0]["model_us"] == pytest.approx(sizes[0]["ring_us"], rel=1e-6)
    if sizes[-1]["ring_us"] > sizes[0]["ring_us"]:
        assert sizes[-1]["model_us"] == pytest.approx(sizes[-1]["ring_us"], rel=1e-6)
    assert all(a["model_us"] < b["model_us"] for a, b in zip(sizes, sizes[1:]))
    assert any("model_us" in note and "alpha" in note for note in table.notes)
    steps = {r["what"]: r for r in table.rows if r["what"].startswith("step")}
    assert set(steps) == {"step: compute", "step: no_overlap", "step: ddp", "step: ddp, 1 rank"}
    assert steps["step: ddp, 1 rank"]["weak-scaling efficiency"] > 0
    assert set(table.figures) == {"collectives_busbw", "collectives_ddp"}


# --- GPUs: NCCL, one process per GPU ------------------------------------------------------------------

needs_gpus = pytest.mark.skipif(GPUS < 2, reason=f"needs 2 or more GPUs for NCCL, found {GPUS}")


@gpu
@needs_gpus
def test_ring_collectives_equal_torch_on_nccl():
    k = GPUS
    _assert_records(launch(_compare_collectives, k, SIZES + (1 << 20, 3 * (1 << 20) + 1), "cuda",
                           backend="nccl", timeout=120), k)


@gpu
@needs_gpus
def test_data_parallel_equals_one_process_on_nccl():
    cfg = TrainConfig(batch=4 * GPUS, steps=2)
    single = train_single(cfg)
    for modes in launch(_train_all_modes, GPUS, cfg, backend="nccl", timeout=120):
        for mode, run in modes.items():
            torch.testing.assert_close(run["params"], single, rtol=1e-9, atol=1e-11)


@gpu
@needs_gpus
def test_nccl_workers_see_the_multicast_switches(monkeypatch):
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        monkeypatch.setenv(name, "0" if name == "NCCL_NVLS_ENABLE" else "1")
    envs = launch(_environment, GPUS, backend="nccl", echo=False)
    for env in envs:
        assert env["NCCL_NVLS_ENABLE"] == "0" and env["NVSHMEM_DISABLE_NVLS"] == "1"
        assert env["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"


def _lab10_checks_pass_the_references(hidden: bool) -> None:
    from gpudl.grading import lab10 as check
    check.ring_broadcast(ring_broadcast, hidden=hidden)
    check.ring_reduce_scatter(ring_reduce_scatter, hidden=hidden)
    check.ring_all_gather(ring_all_gather, hidden=hidden)
    check.ring_all_reduce(ring_all_reduce, hidden=hidden)
    check.data_parallel_step(data_parallel_step, hidden=hidden)


@gpu
@needs_gpus
def test_lab10_checks_pass_the_package_on_nccl_and_gloo():
    """On a machine with 2 or more GPUs the checks run the k <= GPUs cases on NCCL as well."""
    from gpudl.grading import lab10 as check
    assert check._backends(2) == ["gloo", "nccl"]
    _lab10_checks_pass_the_references(hidden=False)
    _lab10_checks_pass_the_references(hidden=True)
