"""The kernel checker catches each kind of bug on tiny numba-cuda kernels and passes correct ones;
numba-cuda's simulator runs the kernels on a CPU; on a GPU the compiled kernels run for real, under
the driver's occupancy API and compute-sanitizer (those tests skip without a GPU)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

import gpudl
from gpudl.cuda_model import kernels as bench_kernels
from gpudl.cuda_model.checker import CheckLimits, checking, run_kernel
from gpudl.cuda_model.device import kernel_script, sanitize, sanitizer_path
from gpudl_instructor.references import lab04 as K          # the lab's kernels: the answers
from gpudl_instructor.references.lab04 import occupancy

import numba
from numba import cuda, float32

GPU = gpudl.DEVICE == "cuda"
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a CUDA device (kernels run in numba's simulator here)")

N = 257


@cuda.jit
def saxpy_ok(a, x, y, out, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < n:
        out[i] = a * x[i] + y[i]


@cuda.jit
def saxpy_no_guard(a, x, y, out, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    out[i] = a * x[i] + y[i] if i < n else 0.0


@cuda.jit
def saxpy_product_index(a, x, y, out, n):
    i = cuda.blockIdx.x * cuda.threadIdx.x
    if i < n:
        out[i] = a * x[i] + y[i]


@cuda.jit
def shift_left(x, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = x[i - 1]


@cuda.jit
def copy_row_guard_only(A, out):
    col, row = cuda.grid(2)
    if row < A.shape[0]:             # the column is not guarded
        out[row, col] = A[row, col]


@cuda.jit
def shared_too_small(x, out, n):
    s = cuda.shared.array(16, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[t]


@cuda.jit
def reverse_no_barrier(x, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[31 - t]


@cuda.jit
def reverse_ok(x, out):
    s = cuda.shared.array(32, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[31 - t]


@cuda.jit
def reverse64_no_barrier(x, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[63 - t]                  # written by a thread of the other warp


@cuda.jit
def block_sums_plain(x, out):
    i = cuda.grid(1)
    if cuda.threadIdx.x == 0:
        out[0] += x[i]


@cuda.jit
def block_sums_atomic(x, out):
    i = cuda.grid(1)
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def early_return(x, out, n):
    s = cuda.shared.array(32, float32)
    i = cuda.grid(1)
    if i >= n:
        return
    s[cuda.threadIdx.x] = x[i]
    cuda.syncthreads()
    out[i] = s[cuda.threadIdx.x]


@cuda.jit
def divergent_barriers(x, out):
    t = cuda.threadIdx.x
    if t < 16:
        cuda.syncthreads()
    else:
        cuda.syncthreads()
    out[t] = x[t]


@cuda.jit
def halo_missing(x, out, n):
    s = cuda.shared.array(34, float32)
    t = cuda.threadIdx.x
    s[t + 1] = x[t]
    cuda.syncthreads()
    out[t] = s[t] + s[t + 1] + s[t + 2]


@cuda.jit
def loops_forever(x, out, n):
    i = cuda.grid(1)
    while i < n:
        out[i] = x[i]


@cuda.jit
def divides(x, out, n):
    i = cuda.grid(1)
    out[i] = x[i] * (1 // (i - 3))


@cuda.jit
def float_index(x, out, n):
    i = cuda.grid(1)
    out[i] = x[i / 2]


@cuda.jit(device=True)
def twice(v):
    return 2 * v


@cuda.jit
def uses_device_function(x, out, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = twice(x[i])


@cuda.jit
def spelled_numba_dot_cuda(x, out, n):
    i = numba.cuda.grid(1)           # compiles on a GPU; numba's simulator knows only `cuda.`
    if i < n:
        out[i] = x[i]


@cuda.jit
def votes(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.syncthreads_count(x[t] > 0)


def _vec(n=N, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _messages(rep):
    return [f.message for f in rep.findings]


# --- correct kernels pass --------------------------------------------------------------------------

def test_a_correct_kernel_passes_and_counts_its_accesses():
    x, y, out = _vec(), _vec(seed=1), np.zeros(N, np.float32)
    rep = run_kernel(saxpy_ok, 3, 128, 2.0, x, y, out, N)
    assert rep.findings == [] and rep.checked
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)
    assert (rep.max_reads_per_thread, rep.max_writes_per_thread) == (2, 1)
    assert rep.reads == {"x": N, "y": N, "out": 0} and rep.writes["out"] == N
    assert rep.warp0["out"]["w"][:4] == [0, 4, 8, 12]       # consecutive lanes, consecutive addresses


def test_the_labs_and_the_benchmarks_kernels_pass_and_agree_with_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(300).astype(np.float32)
    A, B = rng.standard_normal((20, 37)).astype(np.float32), rng.standard_normal((37, 18)).astype(np.float32)
    b = rng.standard_normal(37).astype(np.float32)
    runs = [(lambda: K.saxpy(1.5, x, x), 1.5 * x + x), (lambda: K.add_bias(A, b), A + b),
            (lambda: K.stencil(x), np.convolve(x, np.ones(7), mode="same")), (lambda: K.matmul(A, B), A @ B),
            (lambda: K.array_sum(x), x.sum()), (lambda: bench_kernels.strided_copy(x, 90, 3), x[:270:3])]
    for run, expected in runs:
        with checking(allow_package=True) as report:
            got = run()
        assert report.ok, report.findings
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    with checking(allow_package=True) as report:
        K.stencil(x)
    launch = report.launches[0]
    assert launch.max_reads_per_thread == 3 and launch.intervals == 2


def test_reports_are_deterministic():
    x = _vec()
    a = run_kernel(reverse_no_barrier, 1, 32, x[:32], np.zeros(32, np.float32)).as_dict()
    b = run_kernel(reverse_no_barrier, 1, 32, x[:32], np.zeros(32, np.float32)).as_dict()
    assert a == b


# --- each kind of bug ----------------------------------------------------------------------------

def test_missing_guard_names_thread_block_and_n():
    rep = run_kernel(saxpy_no_guard, 3, 128, 2.0, _vec(), _vec(), np.zeros(N, np.float32), N)
    # the issue's own example: the read is guarded, the write is not
    assert _messages(rep) == ["thread (1, 0, 0) of block (2, 0, 0) wrote out[257], beyond n = 257: is the guard missing?"]


def test_out_of_bounds_write_is_reported_as_written():
    x = _vec(300)[:N].copy()

    @cuda.jit
    def write_past(x, out, n):
        i = cuda.grid(1)
        if i < n:
            out[i + 4] = x[i]

    rep = run_kernel(write_past, 3, 128, x, np.zeros(N, np.float32), N)
    assert rep.findings[0].kind == "out of bounds"
    assert "thread (125, 0, 0) of block (1, 0, 0) wrote out[257], beyond n = 257" in rep.findings[0].message


def test_negative_index_the_simulator_would_wrap():
    rep = run_kernel(shift_left, 1, 32, _vec(32), np.zeros(32, np.float32), 32)
    assert rep.findings[0].kind == "out of bounds"
    assert "thread (0, 0, 0) of block (0, 0, 0) read x[-1], a negative index" in rep.findings[0].message


def test_2d_index_outside_the_shape():
    A = np.zeros((20, 37), np.float32)
    rep = run_kernel(copy_row_guard_only, (3, 2), (16, 16), A, np.zeros_like(A))
    assert rep.findings[0].kind == "out of bounds"
    assert rep.findings[0].message.startswith("thread (5, 0, 0) of block (2, 0, 0) read A[0, 37], outside A's shape (20, 37)")


def test_shared_array_too_small():
    rep = run_kernel(shared_too_small, 1, 32, _vec(32), np.zeros(32, np.float32), 32)
    assert "s[16] of shared memory, outside its shape (16,)" in rep.findings[0].message


def test_shared_memory_race_without_barrier_and_none_with_it():
    x = _vec(32)
    bad = run_kernel(reverse_no_barrier, 1, 32, x, np.zeros(32, np.float32))
    assert bad.findings[0].kind == "race"
    assert run_kernel(reverse64_no_barrier, 1, 64, _vec(64), np.zeros(64, np.float32)).findings[0].kind == "race"
    assert "of shared memory" in bad.findings[0].message and "cuda.syncthreads()" in bad.findings[0].message
    out = np.zeros(32, np.float32)
    good = run_kernel(reverse_ok, 1, 32, x, out)
    assert good.findings == [] and np.array_equal(out, x[::-1])


def test_blocks_writing_one_word_race_but_atomics_do_not():
    x = _vec(256)
    plain = run_kernel(block_sums_plain, 4, 64, x, np.zeros(1, np.float32))
    assert plain.findings[0].kind == "race" and "blocks run in no fixed order" in plain.findings[0].message
    out = np.zeros(1, np.float32)
    atomic = run_kernel(block_sums_atomic, 4, 64, x, out)
    assert atomic.findings == [] and atomic.atomics == {"out": 4}
    assert out[0] == pytest.approx(x[::64].sum(), rel=1e-5)


def test_two_threads_of_a_block_writing_one_element():
    rep = run_kernel(saxpy_product_index, 3, 128, 2.0, _vec(), _vec(), np.zeros(N, np.float32), N)
    assert rep.findings[0].kind == "race" and "one owner thread" in rep.findings[0].message


def test_barrier_not_reached_by_every_thread():
    rep = run_kernel(early_return, 2, 32, _vec(40), np.zeros(40, np.float32), 40)
    assert rep.findings[0].kind == "barrier" and "finished before the cuda.syncthreads()" in rep.findings[0].message
    div = run_kernel(divergent_barriers, 1, 32, _vec(32), np.zeros(32, np.float32))
    assert div.findings[0].kind == "barrier" and "a barrier inside an `if`" in div.findings[0].message


def test_shared_word_read_before_anyone_wrote_it():
    rep = run_kernel(halo_missing, 1, 32, _vec(32), np.zeros(32, np.float32), 32)
    assert [f.kind for f in rep.findings] == ["uninitialized"] * 2
    assert "read s[0] of shared memory before any thread of the block wrote it" in rep.findings[0].message


def test_global_reads_per_thread_against_a_budget():
    @cuda.jit
    def stencil_global(x, out, n):
        i = cuda.grid(1)
        if i < n:
            s = 0.0
            for j in range(max(0, i - 3), min(n, i + 4)):
                s += x[j]
            out[i] = s

    rep = run_kernel(stencil_global, 2, 64, _vec(100), np.zeros(100, np.float32), 100)
    assert rep.findings == [] and rep.max_reads_per_thread == 7
    assert rep.busiest_reader.startswith("thread (3, 0, 0) of block (0, 0, 0)")


def test_endless_loop_stops_quickly_with_a_message():
    t0 = time.monotonic()
    rep = run_kernel(loops_forever, 1, 32, _vec(32), np.zeros(32, np.float32), 32,
                     limits=CheckLimits(thread_steps=5_000))
    assert time.monotonic() - t0 < 30
    assert rep.findings[0].kind == "steps" and "an endless loop" in rep.findings[0].message


def test_absurd_and_invalid_launches_fail_at_once():
    x, out = _vec(32), np.zeros(32, np.float32)
    t0 = time.monotonic()
    huge = run_kernel(saxpy_ok, 10**9, 1024, 1.0, x, x, out, 32)
    assert time.monotonic() - t0 < 1 and not huge.checked
    assert "(n + M - 1) // M blocks, not n blocks?" in huge.findings[0].message
    assert "at most 1,024 threads per block" in run_kernel(saxpy_ok, 1, 2048, 1.0, x, x, out, 32).findings[0].message
    assert "an integer" in run_kernel(saxpy_ok, 2.5, 32, 1.0, x, x, out, 32).findings[0].message


def test_exceptions_name_thread_and_line():
    rep = run_kernel(divides, 1, 8, _vec(8), np.zeros(8, np.float32), 8)
    assert rep.findings[0].kind == "error" and "ZeroDivisionError" in rep.findings[0].message
    assert "thread (3, 0, 0) of block (0, 0, 0)" in rep.findings[0].message
    assert "use // rather than /" in run_kernel(float_index, 1, 8, _vec(8), np.zeros(8, np.float32), 8
                                               ).findings[0].message


def test_device_functions_numba_dot_cuda_and_votes():
    x, out = _vec(40), np.zeros(40, np.float32)
    rep = run_kernel(uses_device_function, 2, 32, x, out, 40)
    assert rep.findings == [] and np.allclose(out, 2 * x)
    out = np.zeros(40, np.float32)
    assert run_kernel(spelled_numba_dot_cuda, 2, 32, x, out, 40).findings == [] and np.array_equal(out, x)
    out = np.zeros(32, np.float32)
    rep = run_kernel(votes, 1, 32, x[:32], out)
    assert rep.findings == [] and set(out) == {float((x[:32] > 0).sum())}
    assert globals()["cuda"] is numba.cuda and globals()["twice"] is twice      # put back after the run


def test_the_packages_kernels_are_refused_in_a_lab():
    with checking() as report:
        bench_kernels.strided_copy(_vec(), 100, 2)
    assert report.findings[0].kind == "package kernel"
    with checking() as report:                             # the references too, where they are installed
        K.saxpy(1.0, _vec(), _vec())
    assert report.findings[0].kind == "package kernel"


# --- the simulator path ------------------------------------------------------------------------------

@pytest.mark.skipif(GPU, reason="the CPU runs numba-cuda's simulator; a GPU compiles")
def test_gpudl_chose_the_simulator_and_checking_intercepts_its_launches():
    from numba.cuda.core import config

    assert os.environ["NUMBA_ENABLE_CUDASIM"] == "1" and config.ENABLE_CUDASIM
    x, y = _vec(), _vec(seed=1)
    out = np.zeros(N, np.float32)
    saxpy_ok[3, 128](2.0, x, y, out, N)              # the simulator itself
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)
    d_out = cuda.to_device(np.zeros(N, np.float32))  # simulator device arrays go through the checker too
    with checking() as report:
        saxpy_ok[3, 128](2.0, cuda.to_device(x), y, d_out, N)
    assert report.ok and len(report.launches) == 1
    np.testing.assert_allclose(d_out.copy_to_host(), 2 * x + y, rtol=1e-6)


def test_kernel_script_rebuilds_a_kernel_with_its_constants_and_device_functions(tmp_path):
    x = _vec(300)
    path = kernel_script(K.stencil_kernel, 3, K.STENCIL_BLOCK, [x, np.zeros(300, np.float32), 300], str(tmp_path))
    text = open(path).read()
    assert "RADIUS = 3" in text and "STENCIL_BLOCK = 128" in text and "float32 = numba.float32" in text
    path2 = kernel_script(uses_device_function, 2, 32, [x[:40], np.zeros(40, np.float32), 40], str(tmp_path))
    assert "@cuda.jit(device=True)\ndef twice" in open(path2).read()
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    # it runs once per sanitizer tool and exercise: it must not pay for importing torch (or gpudl)
    probe = f"import runpy, sys; runpy.run_path({path2!r}); print(sorted({{'torch', 'gpudl'}} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout


def test_sanitize_without_the_tool_says_so(monkeypatch):
    monkeypatch.setattr("gpudl.cuda_model.device.sanitizer_path", lambda: None)
    results = sanitize(saxpy_ok, 1, 32, [1.0, _vec(32), _vec(32), np.zeros(32, np.float32), 32])
    assert [r.tool for r in results] == ["memcheck", "racecheck"] and not any(r.ran for r in results)


# --- on a GPU -----------------------------------------------------------------------------------------

@pytest.mark.gpu
@needs_gpu
def test_gpu_compiled_kernel_runs_for_real_and_is_checked():
    x, y = _vec(100_003), _vec(100_003, seed=1)
    with checking(check=False) as report:
        out = K.saxpy(2.0, x, y)                      # allow_package=False: refused, not launched
    assert report.findings[0].kind == "package kernel"
    out = np.zeros_like(x)
    with checking(CheckLimits(max_threads=1 << 18)) as report:
        saxpy_ok[(len(x) + 255) // 256, 256](2.0, x, y, out, len(x))
    assert report.ok and report.launches[0].threads == (len(x) + 255) // 256 * 256
    np.testing.assert_allclose(out, 2 * x + y, rtol=1e-6)


@pytest.mark.gpu
@needs_gpu
def test_gpu_driver_occupancy_agrees_with_the_model():
    from gpudl.cuda_model.device import driver_occupancy, kernel_resources
    from gpudl.hardware import detect

    spec = detect()
    K.saxpy(1.0, _vec(), _vec())
    K.stencil(_vec())
    for kernel in (K.saxpy_kernel, K.stencil_kernel):
        res = kernel_resources(kernel)
        for threads in (32, 96, 128, 256, 1024):
            for dyn in (0, 10_000):
                model = occupancy(spec, threads, res["registers"], res["shared_bytes"] + dyn).blocks_per_sm
                assert driver_occupancy(kernel, threads, dyn) == model, (kernel.__name__, threads, dyn, res)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.skipif(sanitizer_path() is None, reason="compute-sanitizer is not installed")
def test_gpu_compute_sanitizer_catches_out_of_bounds_and_races():
    x = _vec()
    clean = sanitize(saxpy_ok, 3, 128, [2.0, x, x, np.zeros(N, np.float32), N])
    assert all(r.ran and r.errors == 0 for r in clean), clean

    @cuda.jit
    def write_past(x, out, n):
        i = cuda.grid(1)
        out[i] = x[i % n]

    memcheck = sanitize(write_past, 3, 128, [x, np.zeros(N, np.float32), N], tools=("memcheck",))[0]
    assert memcheck.ran and memcheck.errors > 0, memcheck
    race = sanitize(reverse64_no_barrier, 1, 64, [x[:64], np.zeros(64, np.float32)], tools=("racecheck",))[0]
    assert race.ran and race.errors > 0, race


@pytest.mark.parametrize("n", [1, 4, 6, 7, 8, 67])
def test_the_stencils_expectation_has_one_value_per_input_whatever_n(n):
    """The hidden cases draw n from 4 to 59; np.convolve(mode="same") gave 7 values for n < 7 and a
    correct kernel lost its points."""
    from gpudl.grading import lab04

    x = np.arange(1.0, n + 1)
    expected = [sum(x[j] for j in range(max(0, i - 3), min(n, i + 4))) for i in range(n)]
    assert lab04._convolved(x).tolist() == expected


@pytest.mark.slow
def test_the_solutions_stencil_passes_on_inputs_shorter_than_the_stencil():
    """The solution's own kernel (its cell run here, as a student's cell runs) keeps its points on
    every n the hidden cases can draw below 7."""
    from conftest import ROOT
    from gpudl import notebooks
    from gpudl.grading import lab04
    from gpudl.grading.boundary import as_student
    from gpudl_instructor.inprocess import _compile_cell

    lab = "lab04_cuda_programming_model"
    nb = notebooks.read(ROOT / "solutions" / lab / f"{lab}.ipynb")
    ns: dict = {"__name__": "__main__"}
    for gid in ("setup", "stencil"):
        body, _ = _compile_cell(notebooks.find_cell(nb, gid).source, f"<gpudl-run-stencil-{gid}>")
        exec(body, ns)      # noqa: S102 - the project's own solution
    for n in (4, 5, 6):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        lab04._compare_stencil(as_student(ns["stencil"]), [x])
