"""gpudl.bench: the statistics, the timers (on the CPU and on a simulated asynchronous GPU),
TF32 handling, the benchmark command, and the grader's timer checks (the lecture's LAB 2 code
must be rejected for its missing synchronisation); and lab 02's references
(``gpudl_instructor.references.lab02``): matmul FLOP/s and the regime model."""
from __future__ import annotations

import statistics
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudl import bench, benchmarks, hardware
from gpudl.grading import GradingError, guard
from gpudl.grading import lab02 as check
from gpudl.references import ReferenceUsedError
from gpudl_instructor.references import lab02 as ref

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")


# --- Measurement ------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=40), st.floats(0, 1))
def test_measurement_statistics_match_numpy(times, q):
    m = bench.Measurement(tuple(times))
    assert m.count == len(times)
    assert m.median == pytest.approx(float(np.median(times)))
    assert m.mean == pytest.approx(float(np.mean(times)))
    assert m.quantile(q) == pytest.approx(float(np.quantile(times, q)), abs=1e-12)
    assert m.iqr == pytest.approx(float(np.quantile(times, 0.75) - np.quantile(times, 0.25)), abs=1e-12)


@pytest.mark.parametrize("times", [(), (-1.0,), (float("nan"),), (float("inf"), 1.0)])
def test_measurement_refuses_bad_times(times):
    with pytest.raises(ValueError):
        bench.Measurement(times)


def test_median_ignores_one_slow_run_and_mean_does_not():
    m = bench.Measurement((1.0, 1.0, 1.0, 1.0, 100.0))
    assert m.median == 1.0 and m.mean == pytest.approx(20.8)


# --- time_cpu and measure ---------------------------------------------------------------------

class Counter:
    def __init__(self, seconds=0.0):
        self.calls, self.seconds = 0, seconds

    def __call__(self):
        self.calls += 1
        if self.seconds:
            time.sleep(self.seconds)


def test_time_cpu_warms_up_and_respects_run_limits():
    fn = Counter()
    m = bench.time_cpu(fn, warmup=3, min_runs=7, max_runs=7)
    assert fn.calls == 10 and m.count == 7 and m.warmup == 3 and m.device == "cpu"


def test_time_cpu_measures_sleep_and_refuses_bad_limits():
    m = bench.time_cpu(Counter(0.002), min_runs=3, max_runs=5)
    assert 0.002 <= m.median < 0.05
    with pytest.raises(ValueError):
        bench.time_cpu(Counter(), min_runs=5, max_runs=2)


def test_measure_dispatches_by_device():
    assert bench.measure(Counter(), "cpu", max_runs=5, flush_l2=True, warmup_s=0.1).device == "cpu"
    gpu = bench.SimulatedGPU()
    m = bench.measure(gpu.kernel(0.001), gpu, min_runs=3, max_runs=3, warmup_s=0.0)
    assert m.device == "simulated GPU" and m.count == 3
    with pytest.raises(ValueError):
        bench.measure(Counter(), "tpu")
    with pytest.raises(TypeError):
        bench.measure(Counter(), 3)


def test_check_plausible_names_the_missing_synchronisation():
    bench.check_plausible(1.0e12, 1.0e12, what="at peak")          # at peak: fine
    with pytest.raises(bench.ImplausibleMeasurementError, match="synchronise"):
        bench.check_plausible(13_500e12, 67e12, what="the seed's 6000^3 FP32 on an H200")


@pytest.mark.skipif(CUDA, reason="the refusal is a machine without a GPU's")
def test_host_time_refuses_a_machine_without_a_gpu():
    from gpudl.timing import host_time

    with pytest.raises(RuntimeError, match="no GPU"):
        host_time(lambda: None)


def test_table_renders_its_rows_and_notes():
    t = bench.Table("t", rows=[{"a": 1, "b": 0.5}, {"a": 2, "c": None}], notes=["a note"])
    assert t.columns() == ["a", "b", "c"]
    text, md = t.to_text(), t.to_markdown()
    assert "a note" in text and "| a | b | c |" in md and t.to_json()["rows"][1]["a"] == 2


# --- the FLOP count ---------------------------------------------------------------------------

def _count_by_loops(m, n, k):
    """Multiply-adds of the textbook triple loop, counted one by one: 2 FLOPs each."""
    flops = 0
    for _ in range(m):
        for _ in range(n):
            for _ in range(k):
                flops += 2
    return flops


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (2, 3, 4), (5, 1, 7), (3, 8, 2)])
def test_gemm_flops_counts_the_triple_loop(m, n, k):
    assert ref.gemm_flops(m, n, k) == _count_by_loops(m, n, k)


def test_gemm_flops_matches_the_seed_and_refuses_nonsense():
    assert ref.gemm_flops(2000, 2000, 2000) == 2 * 2 * 2 * 2 * 10 ** 9     # the seed's "2*2*2*2" GFLOP
    for bad in [(0, 1, 1), (1, -2, 1), (1, 1, 1.5)]:
        with pytest.raises(ValueError):
            ref.gemm_flops(*bad)


# --- TF32 -------------------------------------------------------------------------------------

@pytest.fixture
def tf32_off():
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = False


def test_allow_tf32_sets_and_restores(tf32_off):
    with bench.allow_tf32(True):
        assert torch.backends.cuda.matmul.allow_tf32 and bench.tf32_allowed()
        with bench.allow_tf32(False):
            assert not bench.tf32_allowed()
        assert bench.tf32_allowed()
    assert not torch.backends.cuda.matmul.allow_tf32


def test_allow_tf32_restores_after_an_exception(tf32_off):
    with pytest.raises(KeyError):
        with bench.allow_tf32(True):
            raise KeyError("boom")
    assert not bench.tf32_allowed()


def test_allow_tf32_respects_torchs_newer_api(tf32_off):
    torch.backends.cuda.matmul.fp32_precision = "tf32"      # the new spelling: the legacy getter now raises
    try:
        assert bench.tf32_allowed()
        with bench.allow_tf32(False):
            assert not bench.tf32_allowed()
        assert torch.backends.cuda.matmul.fp32_precision == "tf32"
    finally:
        torch.backends.cuda.matmul.fp32_precision = "ieee"


# --- the simulated GPU ------------------------------------------------------------------------

def test_simulated_launch_is_asynchronous_and_synchronize_waits():
    gpu = bench.SimulatedGPU()
    t0 = time.perf_counter()
    gpu.launch(0.1)
    launched = time.perf_counter() - t0
    gpu.synchronize()
    done = time.perf_counter() - t0
    assert launched < 0.05 and done >= 0.1


def test_simulated_events_time_queued_work_and_need_synchronisation():
    gpu = bench.SimulatedGPU()
    start, end = gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        gpu.launch(0.004)
    end.record()
    assert not end.query()
    with pytest.raises(RuntimeError, match="not ready"):
        start.elapsed_time(end)
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) == pytest.approx(12.0, abs=0.5)           # milliseconds, as CUDA


def test_simulated_events_need_recording_and_timing():
    gpu = bench.SimulatedGPU()
    a, b = gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="recorded"):
        a.elapsed_time(b)
    c, d = gpu.Event(), gpu.Event()
    c.record(); d.record(); gpu.synchronize()
    with pytest.raises(RuntimeError, match="enable_timing"):
        c.elapsed_time(d)


def test_first_calls_cost_host_time():
    gpu = bench.SimulatedGPU(first_launch_s=0.1)
    t0 = time.perf_counter()
    gpu.launch(0.0)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    gpu.launch(0.0)
    assert first >= 0.1 > time.perf_counter() - t0
    kernel = gpu.kernel(0.001, first_call_s=0.02, slow_every=2, slow_factor=5.0)
    kernel(); kernel(); kernel()
    assert kernel.calls == 3
    assert [round(launch.seconds, 6) for launch in gpu.launches[-3:]] == [0.001, 0.005, 0.001]


def test_simulated_gpu_is_busy_until_its_queue_drains():
    gpu = bench.SimulatedGPU()
    assert gpu.idle()
    gpu.launch(0.05)
    assert not gpu.idle()                  # a timer returning now has not waited for the work
    gpu.synchronize()
    assert gpu.idle()


def test_unsynchronised_host_clock_sees_only_the_launch():
    """The lecture's mistake, reproduced on the simulator: time.perf_counter around a launch."""
    gpu = bench.SimulatedGPU()
    t0 = time.perf_counter()
    gpu.launch(0.05)
    unsynced = time.perf_counter() - t0
    gpu.synchronize()
    t0 = time.perf_counter()
    gpu.launch(0.05)
    gpu.synchronize()
    synced = time.perf_counter() - t0
    assert unsynced < 0.025 and synced >= 0.05


def test_simulated_matmul_models_rates_dtypes_and_tf32(tf32_off):
    gpu = bench.SimulatedGPU(rates={"fp32": 1e12, "tf32": 8e12, "fp16": 16e12})
    a = torch.zeros(64, 32)
    out = gpu.matmul(a, torch.zeros(32, 16))
    assert out.shape == (64, 16) and out.dtype == torch.float32
    with bench.allow_tf32(True):
        gpu.matmul(a, torch.zeros(32, 16))
    gpu.matmul(a.half(), torch.zeros(32, 16).half())
    np_out = gpu.matmul(np.zeros((4, 5), np.float32), np.zeros((5, 6), np.float32))
    assert np_out.shape == (4, 6)
    fp32, tf32, fp16, _ = gpu.launches
    flops = 2 * 64 * 32 * 16
    assert (fp32.name, fp32.tf32, fp32.seconds) == ("matmul fp32", False, pytest.approx(flops / 1e12))
    assert (tf32.name, tf32.tf32, tf32.seconds) == ("matmul tf32", True, pytest.approx(flops / 8e12))
    assert (fp16.dtype, fp16.shape, fp16.seconds) == ("fp16", (64, 16, 32), pytest.approx(flops / 16e12))
    with pytest.raises(ValueError, match="inner sizes"):
        gpu.matmul(torch.zeros(3, 4), torch.zeros(5, 6))
    with pytest.raises(ValueError, match="same dtype"):
        gpu.matmul(torch.zeros(3, 4), torch.zeros(4, 6).half())
    with pytest.raises(ValueError, match="no rate"):
        gpu.matmul(torch.zeros(3, 4).bfloat16(), torch.zeros(4, 6).bfloat16())


def test_time_cuda_on_the_simulator_warms_up_and_reads_the_work():
    gpu = bench.SimulatedGPU()
    kernel = gpu.kernel(0.003, first_call_s=0.05, slow_every=5, slow_factor=4.0)
    m = bench.time_cuda(kernel, api=gpu, warmup=2, min_runs=10, budget_s=0.5)
    assert m.median == pytest.approx(0.003, rel=0.05)            # the cold call and the slow runs do not move it
    assert max(m.times) < 0.05                                    # the 50 ms first call was a warm-up call
    assert kernel.calls >= 2 + m.count
    assert m.method == "events" and m.device == "simulated GPU"


def test_time_cuda_keeps_warming_up_short_work():
    gpu = bench.SimulatedGPU()
    kernel = gpu.kernel(0.001)
    m = bench.time_cuda(kernel, api=gpu, warmup=3, min_runs=5, max_runs=5, warmup_s=0.05)
    assert kernel.calls - m.count >= 10                           # ~50 warm-up calls of 1 ms, not just 3


class FlushingGPU(bench.SimulatedGPU):
    """A simulated GPU whose L2 flush is 1 ms of device work, counted."""

    flushes = 0

    def flush_l2(self) -> None:
        self.flushes += 1
        self.launch(0.001, name="flush")


def test_time_cuda_times_one_do_bench_window_of_runs_with_their_flushes():
    gpu = FlushingGPU()
    kernel = gpu.kernel(0.001)
    m = bench.time_cuda(kernel, api=gpu, warmup=3, min_runs=10, warmup_s=0.02, min_time_s=0.1)
    assert m.median == pytest.approx(0.001, rel=0.01)            # the flush is outside the events
    assert m.method == "events + L2 flush"
    assert gpu.flushes == 5 + m.count                             # before the 5 estimate runs and every timed run
    # do_bench's window: 100 ms of runs *with* their flushes, ~50 runs of 1 + 1 ms (not 100 runs of 1 ms)
    assert 10 <= m.count <= 50
    assert kernel.calls - m.count - 3 - 5 >= 5                    # ~10 warm-up calls of 2 ms fill warmup_s


# --- lab 02's references: matmul_tflops and the sweep ----------------------------------------

SIM_RATES = {"fp32": 0.2e12, "tf32": 1.6e12, "fp16": 3.2e12, "bf16": 3.2e12}


@pytest.mark.parametrize("dtype,n", [("fp32", 256), ("tf32", 512), ("fp16", 512), ("bf16", 512)])
def test_matmul_tflops_on_the_simulator_reads_its_rate(dtype, n, tf32_off):
    gpu = bench.SimulatedGPU(rates=SIM_RATES)
    r = ref.matmul_tflops(n, n, n, dtype, gpu, min_runs=5, budget_s=0.2, warmup_s=0.0)
    assert r.mode == dtype and r.tflops == pytest.approx(SIM_RATES[dtype] / 1e12, rel=0.05)
    assert r.fraction_of_peak == pytest.approx(1.0, rel=0.05)
    assert {launch.tf32 for launch in gpu.launches} == {dtype == "tf32"}
    assert not bench.tf32_allowed()                                  # restored
    assert "TFLOP/s" in str(r)


def test_matmul_tflops_sets_tf32_exactly_as_asked(tf32_off):
    gpu = bench.SimulatedGPU(rates=SIM_RATES)
    with bench.allow_tf32(True):                                     # on before: FP32 must still be FP32
        r = ref.matmul_tflops(128, dtype="fp32", device=gpu, min_runs=3, max_runs=3, warmup_s=0.0)
        assert bench.tf32_allowed()
    assert r.mode == "fp32" and not any(launch.tf32 for launch in gpu.launches)
    r = ref.matmul_tflops(128, dtype="fp32", device=gpu, tf32=True, min_runs=3, max_runs=3, warmup_s=0.0)
    assert r.mode == "tf32"
    with pytest.raises(ValueError, match="contradiction"):
        ref.matmul_tflops(128, dtype="tf32", device=gpu, tf32=False)


class LyingGPU(bench.SimulatedGPU):
    """Claims a peak 10x below what it runs at: every honest figure is 'above peak'."""

    def peak_flops(self, mode):
        return super().peak_flops(mode) / 10


def test_matmul_tflops_refuses_a_figure_above_peak():
    gpu = LyingGPU(rates=SIM_RATES)
    with pytest.raises(bench.ImplausibleMeasurementError, match="peak"):
        ref.matmul_tflops(256, dtype="fp32", device=gpu, min_runs=3, max_runs=3, warmup_s=0.0)
    r = ref.matmul_tflops(256, dtype="fp32", device=gpu, check=False, min_runs=3, max_runs=3, warmup_s=0.0)
    assert r.fraction_of_peak > 5


def test_matmul_tflops_on_the_cpu_has_no_peak():
    r = ref.matmul_tflops(64, 32, 16, "fp32", "cpu", max_runs=5)
    assert (r.m, r.n, r.k, r.device, r.peak_flops, r.fraction_of_peak) == (64, 32, 16, "cpu", None, None)
    assert r.flops == 2 * 64 * 32 * 16 and r.tflops > 0


def test_matmul_result_validates():
    m = bench.Measurement((1.0,))
    with pytest.raises(ValueError):
        ref.MatmulResult(0, 1, 1, "fp32", "fp32", "cpu", m)
    with pytest.raises(ValueError):
        ref.MatmulResult(1, 1, 1, "int8", "int8", "cpu", m)


def test_matmul_sweep_covers_every_pair_and_is_silent_while_grading(monkeypatch, capfd):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    gpu = bench.SimulatedGPU(rates=SIM_RATES)
    results = ref.matmul_sweep([64, 128], ["fp32", "fp16"], gpu, min_runs=3, max_runs=3, warmup_s=0.0)
    assert [(r.dtype, r.n) for r in results] == [("fp32", 64), ("fp32", 128), ("fp16", 64), ("fp16", 128)]
    out, err = capfd.readouterr()
    assert out == "" and err == ""


# --- lab 02's references: the regime model ---------------------------------------------------

def test_gemm_waves_by_hand():
    w = ref.gemm_waves(8192, 8192, 132)                  # 64 x 64 tiles of 128 on an H100
    assert (w.tiles, w.waves) == (4096, 32) and w.efficiency == pytest.approx(4096 / (32 * 132))
    w = ref.gemm_waves(1000, 1025, 64)                   # ceil: 8 x 9 tiles
    assert (w.tiles, w.waves) == (72, 2) and w.efficiency == pytest.approx(72 / 128)
    with pytest.raises(ValueError):
        ref.gemm_waves(0, 1, 1)


def test_gemm_regime_on_an_h100_in_fp32():
    h100 = hardware.SPECS["H100-SXM"]
    peak = hardware.peak_flops(h100, "fp32")
    # by hand: 2*128^3 / 66.9e12 = 63 ns < 5 us; 1024: 64 tiles < 132 SMs; 1536: 144 tiles,
    # 2 waves, 144/264 = 0.55; 8192: 4096 tiles, 32 waves, 0.97
    assert [ref.gemm_regime(n, n, n, h100.sms, peak) for n in (128, 1024, 1536, 8192)] == \
        ["launch", "underfilled", "waves", "compute"]
    assert set(ref.REGIMES) == {"launch", "underfilled", "waves", "compute"}
    assert [ref.regime(n, h100.sms, peak) for n in (128, 1024, 1536, 8192)] == list(ref.REGIMES)


def test_fraction_of_peak_refuses_a_figure_above_peak():
    h200 = hardware.SPECS["H200"]
    assert ref.fraction_of_peak(700, h200, "bf16") == pytest.approx(700e12 / hardware.peak_flops(h200, "bf16"))
    with pytest.raises(ValueError, match="broken"):
        ref.fraction_of_peak(13_500, h200, "fp32")           # the lecture's code on an H200


# --- the benchmark command --------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(CUDA, reason="the CPU table")
def test_matmul_benchmark_on_the_cpu():
    table = benchmarks.run("matmul", ["--sizes", "32", "64"])
    assert [(r["impl"], r["n"]) for r in table.rows] == [("numpy.matmul", 32), ("torch.matmul", 32),
                                                         ("numpy.matmul", 64), ("torch.matmul", 64)]
    for r in table.rows:
        assert r["gpudl ms"] > 0 and r["Timer ms"] > 0 and r["do_bench ms"] is None and r["of peak"] is None
        assert r["TFLOP/s"] == pytest.approx(2 * r["n"] ** 3 / (r["gpudl ms"] / 1e3) / 1e12)
    assert any("do_bench needs a GPU" in n for n in table.notes)


@pytest.mark.slow
@pytest.mark.skipif(CUDA, reason="the CPU table")
def test_startup_benchmark_times_each_first_call_in_fresh_processes():
    table = benchmarks.run("startup", ["--quick", "--processes", "2"])
    assert [r["step"] for r in table.rows] == ["import torch", "first matmul 256^3", "second matmul 256^3",
                                               "first conv2d 3x3, 64 ch, 56 x 56", "second conv2d"]
    for r in table.rows:
        assert 0 < r["min ms"] <= r["median ms"] <= r["max ms"]
    assert table.rows[0]["min ms"] > 50            # importing torch: a fresh process each time, not this one's
    with pytest.raises(ValueError, match="--processes"):
        benchmarks.run("startup", ["--processes", "0"])


@pytest.mark.skipif(CUDA, reason="the refusal is a machine without a GPU's")
def test_startup_benchmark_reports_a_fresh_process_that_failed(monkeypatch):
    from gpudl import hardware

    monkeypatch.setattr(hardware, "device", lambda: "cuda")     # no GPU here: the child cannot make its context
    with pytest.raises(RuntimeError, match="(?s)fresh process failed .exit status 1.*CUDA"):
        benchmarks.run("startup", ["--processes", "1", "-n", "64"])


def test_the_cli_finds_the_benchmark():
    from gpudl import benchmarks

    assert "matmul" in benchmarks.names()


# --- the grader's timer checks ----------------------------------------------------------------

def lecture_gpu_timer(fn, gpu, warmup=3, repeats=10):
    """The lecture's LAB 2 Problem 4 GPU code, as a timer: time.time() around one call."""
    timestt = time.time()
    C = fn()  # noqa: F841 - as in the lecture
    timeend = time.time()
    return timeend - timestt


def good_gpu_timer(fn, gpu, warmup=3, repeats=10):
    for _ in range(warmup):
        fn()
    gpu.synchronize()
    events = [(gpu.Event(enable_timing=True), gpu.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    gpu.synchronize()
    return statistics.median(s.elapsed_time(e) / 1e3 for s, e in events)


def test_the_lectures_code_is_rejected_for_its_missing_synchronisation():
    with pytest.raises(GradingError) as info:
        check.gpu_timer(lecture_gpu_timer)
    message = str(info.value)
    assert "synchronis" in message and "launch" in message


def test_a_synchronised_event_timer_passes_the_check():
    check.gpu_timer(good_gpu_timer)
    check.gpu_timer(good_gpu_timer, hidden=True)


def test_timer_checks_refuse_gpudls_own_timers():
    def borrowed(fn, warmup=1, repeats=5):
        return bench.time_cpu(fn, warmup=warmup, min_runs=repeats, max_runs=repeats).median

    with pytest.raises(ReferenceUsedError):
        check.cpu_timer(borrowed)


def test_timer_checks_refuse_gpudls_timers_behind_a_course_tool():
    """The timers are forbidden by name, so a course tool that calls them for the student (the
    tuner's measurement, with the warm-up and runs the student passes) is refused too."""
    from gpudl.tuning import Tuner

    def laundered(fn, warmup=1, repeats=5):
        return Tuner(bench.time_cpu, warmup=warmup, min_runs=repeats)._measure(fn)

    with pytest.raises(ReferenceUsedError):
        check.cpu_timer(laundered)


def test_guard_lets_the_instructors_references_call_each_other():
    """matmul_tflops calls gemm_flops inside a guard that forbids gemm_flops for student code: the
    references' own calls are allowed."""
    with guard(ref.gemm_flops):
        assert ref.matmul_tflops(16, dtype="fp32", device="cpu", min_runs=3, max_runs=3).tflops > 0
        with pytest.raises(ReferenceUsedError):
            ref.gemm_flops(1, 1, 1)


# --- on a GPU ---------------------------------------------------------------------------------

@needs_cuda
def test_time_cuda_and_matmul_tflops_on_the_gpu(tf32_off):
    r = ref.matmul_tflops(2048, dtype="fp32", device="cuda")
    assert r.device == "cuda" and r.peak_flops is not None and 0 < r.fraction_of_peak <= 1.05
    assert r.measurement.method == "cuda events + L2 flush"


@needs_cuda
def test_host_time_is_the_launch_not_the_work():
    """A 4096^3 FP32 product takes milliseconds on the GPU; its call returns in microseconds."""
    from gpudl.timing import host_time

    a = torch.randn(4096, 4096, device="cuda")
    work = bench.time_cuda(lambda: a @ a).median
    seconds = host_time(lambda: a @ a)
    assert seconds is not None and 0 < seconds < work / 10


@needs_cuda
def test_tf32_changes_the_arithmetic_on_the_gpu(tf32_off):
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(1024, 1024, device="cuda", generator=g)
    b = torch.randn(1024, 1024, device="cuda", generator=g)
    exact = (a.double() @ b.double())
    with bench.allow_tf32(False):
        err_fp32 = ((a @ b).double() - exact).abs().max().item()
    with bench.allow_tf32(True):
        err_tf32 = ((a @ b).double() - exact).abs().max().item()
    assert err_tf32 > 10 * err_fp32


@needs_cuda
def test_the_lectures_code_is_rejected_on_the_gpu_too():
    with pytest.raises(GradingError, match="synchronis"):
        check._gpu_timer_on_cuda(lecture_gpu_timer, 2048)
    check._gpu_timer_on_cuda(good_gpu_timer, 2048)
