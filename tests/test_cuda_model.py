"""Lab 04's model (the instructor's references: launch sizes, indices, occupancy, waves, sectors,
banks) and what the course edition keeps of it (gpudl.cuda_model's tools, gpudl.hardware's SM
limits, the benchmark's model side), against the lectures' numbers and the rules of CUDA's
occupancy calculator."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import gpudl.cuda_model
from gpudl import benchmarks, hardware
from gpudl.benchmarks import cuda_model as bench
from gpudl.cuda_model import LIMITS, column_indices, dim3, padded_width, resident_threads, strided_addresses, thread_count
from gpudl_instructor.benchmarks import cuda_occupancy
from gpudl_instructor.references.lab04 import (bank_conflicts, global_index, grid_for, grid_size, idle_threads,
                                               launch_shape, linear_index, load_efficiency, occupancy,
                                               occupancy_triple, sectors, strided_sectors, waves, waves_pair)


# --- launch geometry -------------------------------------------------------------------------

def test_vector_add_of_the_lecture():
    # "CUDA kernel launch with 196 blocks of 256 threads" for 50,000 elements
    assert grid_size(50_000, 256) == 196
    assert idle_threads(50_000, 256) == 196 * 256 - 50_000 == 176


@pytest.mark.parametrize("n, m", [(1, 1), (1, 1024), (255, 256), (256, 256), (257, 256), (10**6 + 7, 96), (0, 32)])
def test_grid_size_covers_n_with_less_than_one_block_spare(n, m):
    blocks = grid_size(n, m)
    assert blocks * m >= n
    assert blocks == 0 or (blocks - 1) * m < n
    assert 0 <= idle_threads(n, m) < m


def test_grid_size_refuses_bad_input():
    for bad in [(-1, 32), (10, 0), (10, 2.5), (True, 32)]:
        with pytest.raises(ValueError):
            grid_size(*bad)


def test_the_lectures_thread_21_and_72_threads():
    assert global_index(2, 8, 5) == (21, 0, 0)                # threadIdx 5 + blockIdx 2 * M 8
    assert thread_count((3, 2), (4, 3)) == 72                 # 3 x 2 blocks of 4 x 3 threads
    coords = {global_index((bx, by), (4, 3), (tx, ty))
              for bx, by, tx, ty in itertools.product(range(3), range(2), range(4), range(3))}
    assert coords == {(x, y, 0) for x in range(12) for y in range(6)}


def test_linear_index_numbers_every_thread_of_a_3d_grid_once():
    grid, block = (2, 3, 2), (4, 2, 3)
    seen = [linear_index(b, block, t, grid)
            for b in itertools.product(*map(range, grid)) for t in itertools.product(*map(range, block))]
    assert sorted(seen) == list(range(thread_count(grid, block)))


def test_dim3_and_grid_for():
    assert dim3(8) == (8, 1, 1) and dim3((3, 2)) == (3, 2, 1)
    assert grid_for((37, 20), (16, 16)) == (3, 2, 1)
    with pytest.raises(ValueError):
        dim3((1, 2, 3, 4))
    with pytest.raises(ValueError):
        global_index(0, 8, 8)                                 # thread 8 of an 8-thread block


# --- SM limits ----------------------------------------------------------------------------------

def test_every_spec_has_sm_limits_and_its_shared_memory():
    for spec in hardware.SPECS.values():
        lim = hardware.sm_limits(spec)
        assert lim.compute_capability == spec.compute_capability
        assert lim.shared_memory_per_sm == spec.smem_per_sm_kib * 1024, spec.name
        assert lim.registers_per_sm * 4 == spec.registers_per_sm_kib * 1024, spec.name


def test_resident_threads_of_the_a100_and_ga100():
    # "Maximum number of threads in flight on A100: 221,184 (108SM x 2048 threads/SM)"
    assert resident_threads("A100") == 221_184
    assert hardware.sm_limits("A100").max_threads_per_sm == 2048
    full = 8 * 8 * 2                                          # 8 GPCs, 8 TPCs/GPC, 2 SMs/TPC
    assert full == 128 and full * hardware.SPECS["A100"].fp32_units_per_sm == 8192


def test_sm_limits_by_compute_capability():
    assert hardware.sm_limits((7, 5)).max_warps_per_sm == 32
    assert hardware.sm_limits((9, 2)).max_blocks_per_sm == 32      # newest of the same major
    with pytest.raises(ValueError, match="no SM limits"):
        hardware.sm_limits((3, 5))


# --- occupancy ---------------------------------------------------------------------------------

def test_occupancy_reproduces_the_nsight_compute_table():
    # launch__occupancy_limit_blocks 32, _registers 21, _warps 16, _shared_mem 384 for 128 threads,
    # 17 registers/thread, 20 bytes of static shared memory, on an 80-SM GPU; 4,132 blocks = 3.23 waves
    occ = occupancy("V100", 128, 17, 20)
    assert dict(occ.limits) == {"blocks": 32, "warps": 16, "registers": 21, "shared memory": 384}
    assert (occ.blocks_per_sm, occ.limiter) == (16, "warps")
    assert occ.registers_per_warp == 768 and occ.fraction == 1.0
    assert hardware.SPECS["V100"].sms == 80
    assert round(waves(4132, occ.blocks_per_sm, 80).waves, 2) == 3.23


def _brute_force(spec, threads, regs, shared):
    """Occupancy by trying block counts against each resource, the allocation rules spelled out
    independently of the implementation (cuda_occupancy.h)."""
    lim = hardware.sm_limits(spec)
    warps = math.ceil(threads / 32)
    regs_warp = math.ceil(regs * 32 / 256) * 256
    smem = math.ceil((shared + lim.reserved_shared_memory_per_block) / lim.shared_memory_granularity) \
        * lim.shared_memory_granularity

    def fits(blocks):
        per_partition = [0] * lim.register_sub_partitions
        for w in range(blocks * warps):                       # place warps one by one where registers remain
            slot = min(range(len(per_partition)), key=per_partition.__getitem__)
            per_partition[slot] += regs_warp
        return (blocks <= lim.max_blocks_per_sm and blocks * warps <= lim.max_warps_per_sm
                and max(per_partition) <= lim.registers_per_sm // lim.register_sub_partitions
                and blocks * smem <= lim.shared_memory_per_sm)

    b = 0
    while fits(b + 1):
        b += 1
    return b


@pytest.mark.parametrize("spec", ["V100", "T4", "A100", "RTX3090", "H100-SXM"])
def test_occupancy_matches_a_brute_force_placement(spec):
    rng = np.random.default_rng(sum(map(ord, spec)))
    for _ in range(60):
        t, r, s = int(rng.integers(1, 1025)), int(rng.integers(1, 128)), int(rng.integers(0, 40_000))
        occ = occupancy(spec, t, r, s)
        assert occ.blocks_per_sm == _brute_force(spec, t, r, s), (spec, t, r, s, dict(occ.limits))
        assert occ.blocks_per_sm == min(occ.limits.values())
        assert occ.limiter in occ.limiters and occ.limits[occ.limiter] == occ.blocks_per_sm


def test_occupancy_limits_and_errors():
    assert occupancy("H100-SXM", 1024, 255, 0).blocks_per_sm == 0        # 255 x 32 x 32 warps > 65,536 registers
    assert occupancy("A100", 128, 32, 0).limits["shared memory"] == 164 * 1024 // 1024    # the 1 KB reserve alone
    assert occupancy("V100", 128, 32, 0).limits["shared memory"] == math.inf
    assert occupancy("A100", 64, 32, 200 * 1024).blocks_per_sm == 0      # more than a block may have
    assert occupancy("A100", 256, 32, 20_000, carveout_kib=64).limits["shared memory"] == 3
    assert set(LIMITS) == set(occupancy("T4", 64, 32, 0).limits)
    for bad in [(0, 32, 0), (2048, 32, 0), (128, 300, 0), (128, 32, -1)]:
        with pytest.raises(ValueError):
            occupancy("A100", *bad)


# --- waves ---------------------------------------------------------------------------------------

def test_waves_of_the_lecture():
    w = waves(12, 1, 8)                  # 12 blocks on 8 SMs, one block per SM
    assert (w.waves, w.wave_count, w.full_waves, w.tail_blocks) == (1.5, 2, 1, 4)
    assert w.efficiency == 0.75 and w.tail_utilization == 0.5
    assert waves(1056, 8, 132).efficiency == 1.0
    with pytest.raises(ValueError):
        waves(0, 1, 8)


# --- sectors and banks -----------------------------------------------------------------------------

def test_sectors_of_strided_warps():
    assert [strided_sectors(s) for s in (1, 2, 4, 8, 16, 32)] == [4, 8, 16, 32, 32, 32]
    assert strided_sectors(1, element_bytes=8) == 8 and strided_sectors(1, element_bytes=2) == 2
    assert sectors([0], 1) == 1 and load_efficiency([0], 1) == 1 / 32      # "32 B fetched to use 1 B"
    assert sectors([30], 4) == 2                                            # an access straddling two sectors
    assert sectors(strided_addresses(1, 4, offset=1), 4) == 5               # misaligned by one element
    assert load_efficiency(strided_addresses(1), 4) == 1.0


def test_bank_conflicts_and_padding():
    assert bank_conflicts(range(32)) == 1
    assert bank_conflicts([2 * t for t in range(32)]) == 2
    assert bank_conflicts(column_indices(32)) == 32
    assert bank_conflicts([5] * 32) == 1                                    # a broadcast
    assert padded_width(32) == 33 and bank_conflicts(column_indices(33)) == 1
    assert padded_width(31) == 31 and padded_width(64) == 65
    for width in range(1, 70):
        assert bank_conflicts(column_indices(padded_width(width))) == 1


# --- the exercises' shapes ---------------------------------------------------------------------

def test_the_exercise_shaped_references():
    assert launch_shape(50_000, 256) == (196, 176) and launch_shape(0, 128) == (0, 0)
    assert occupancy_triple(hardware.sm_limits("V100"), 128, 17, 20) == (
        16, "warps", {"blocks": 32, "warps": 16, "registers": 21, "shared memory": 384})
    assert waves_pair(12, 1, 8) == (1.5, 0.75)


# --- the course edition holds no answer ------------------------------------------------------------

def test_the_course_edition_keeps_tools_only():
    gone = {"grid_size", "idle_threads", "global_index", "linear_index", "grid_for", "occupancy", "Occupancy",
            "waves", "Waves", "sectors", "strided_sectors", "load_efficiency", "bank_conflicts"}
    modules = [gpudl.cuda_model, gpudl.cuda_model.launch, gpudl.cuda_model.memory, gpudl.cuda_model.occupancy]
    for module in modules:
        names = {k for k, v in vars(module).items() if not isinstance(v, type(gpudl))}    # submodules aside
        assert not gone & names, (module.__name__, sorted(gone & names))
    import gpudl.cuda_model.kernels as kernels
    assert {"saxpy", "saxpy_kernel", "add_bias", "stencil", "stencil_kernel", "matmul", "array_sum",
            "sum_kernel"}.isdisjoint(vars(kernels))


# --- the benchmark's model side, and its CPU form --------------------------------------------------

@pytest.mark.parametrize("spec", ["V100", "T4", "A100", "RTX3090", "H100-SXM", "H200"])
def test_the_staircase_kernel_is_bound_by_shared_memory(spec):
    occ = occupancy(spec, bench.STAIR_THREADS, 32, bench.STAIR_SHARED)
    assert occ.limiter == "shared memory" and occ.blocks_per_sm == bench.stair_blocks_per_sm(spec)


def test_the_stride_model_is_the_sector_model():
    for row in bench.stride_rows():
        assert row["sectors per warp"] == strided_sectors(row["stride"])
        moved = strided_sectors(row["stride"]) * 32 + 128
        assert row["model / stride 1"] == pytest.approx(256 / moved)
    rows = bench.stair_rows(100, 2.0)
    assert all(r["wave_count"] == waves(r["grid"], 1, 100).wave_count for r in rows)
    assert all(r["waves"] == round(waves(r["grid"], 1, 100).waves, 3) for r in rows)


def test_quick_benchmark_shows_the_model_tables():
    table = benchmarks.run("cuda_model", ["--quick"])
    stairs = [r for r in table.rows if r["part"] == "staircase"]
    assert stairs and all(r["wave_count"] >= 1 for r in stairs)
    stride = {r["stride"]: r["sectors per warp"] for r in table.rows if r["part"] == "stride"}
    assert stride[1] == 4 and stride[32] == 32
    assert set(table.figures) == {"cuda_model_staircase", "cuda_model_stride"}
    assert "cuda_model" in benchmarks.names()


def test_the_instructors_occupancy_benchmark_recomputes_the_lecture():
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    cuda_occupancy.add_arguments(parser)
    table = cuda_occupancy.run(parser.parse_args(["--quick"]))
    lecture = {r["limit"]: r["blocks per SM"] for r in table.rows if r["part"] == "lecture"}
    assert lecture["registers"] == 21 and lecture["waves of 4,132 blocks on 80 SMs"] == 3.23
    assert all(r["agree"] for r in table.rows if r["part"] == "staircase")
