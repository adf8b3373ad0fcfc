"""gpudl.profiling: a real torch.profiler trace summarised as nsys's gpukernsum and nvtxkernsum."""
from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
import torch

from gpudl import profiling as P
from gpudl_instructor.references import lab09 as ref      # lab 09's answer (gpukernsum), kept by the instructor

CUDA = torch.cuda.is_available()


def _events(spec):
    """spec: [(name, range, range_id, [durations])] -> events laid end to end, with gaps."""
    out, t = [], 0
    for name, rng, rid, durations in spec:
        for d in durations:
            out.append({"name": name, "start_ns": t, "duration_ns": d, "range": rng, "range_id": rid, "device": "cpu"})
            t += d + 1000                                     # idle time between kernels
    return out


SPEC = [("bn", "layer1", 1, [40, 60, 50]), ("gemm", "layer1", 1, [300, 310]), ("bn", "layer2", 2, [20]),
        ("add", "layer2", 2, [5, 7, 9, 11]), ("gemm", "", -1, [290])]


def test_kernel_summary_is_per_name_with_shares_of_kernel_time():
    rows = ref.kernel_summary(_events(SPEC))
    assert [r.name for r in rows] == ["gemm", "bn", "add"]          # by total time
    durations = {"gemm": [300, 310, 290], "bn": [40, 60, 50, 20], "add": [5, 7, 9, 11]}
    grand = sum(sum(d) for d in durations.values())
    for r in rows:
        d = durations[r.name]
        assert (r.instances, r.total_ns, r.min_ns, r.max_ns) == (len(d), sum(d), min(d), max(d))
        assert r.avg_ns == pytest.approx(np.mean(d)) and r.med_ns == statistics.median(d)
        assert r.stddev_ns == pytest.approx(np.std(d, ddof=1))
        assert r.time_pct == pytest.approx(100 * sum(d) / grand)
    assert P.arithmetic_problems(rows) == []
    # shares of kernel time, not of the trace's wall-clock span (which holds the idle gaps)
    events = _events(SPEC)
    wall = max(e["start_ns"] + e["duration_ns"] for e in events) - min(e["start_ns"] for e in events)
    assert sum(r.total_ns for r in rows) < wall
    top = ref.kernel_summary(events, top=2)
    assert [r.name for r in top] == ["gemm", "bn"] and top[0].time_pct == rows[0].time_pct


def test_range_summary_groups_by_range_and_counts_occurrences():
    events = _events(SPEC) + _events([("bn", "layer1", 7, [10])])     # a second occurrence of layer1
    rows = P.range_summary(events)
    assert all(r.range for r in rows)                                 # kernels outside ranges are left out
    layer1 = [r for r in rows if r.range == "layer1"]
    assert [r.name for r in layer1] == ["gemm", "bn"] and layer1[0].range_instances == 2
    assert layer1[1].instances == 4 and layer1[1].total_ns == 160
    assert sum(r.time_pct for r in layer1) == pytest.approx(100)
    assert rows[0].range == "layer1"                                  # ranges by total kernel time
    assert P.arithmetic_problems(rows) == []


def test_arithmetic_checks_catch_a_broken_table():
    good = ref.kernel_summary(_events(SPEC))
    bad = [P.KernelRow(r.name, r.instances, r.total_ns, r.avg_ns * 1.1, r.med_ns, r.min_ns, r.max_ns * 2, 0, r.time_pct)
           for r in good]
    problems = P.arithmetic_problems(bad)
    assert any("x" in p and "total" in p for p in problems)
    with pytest.raises(ValueError, match="does not add up"):
        P.check_summary(bad[:1])                                      # one row: shares do not sum to 100 either
    with pytest.raises(ValueError, match="instance"):
        P.KernelRow("k", 0, 1, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="duration"):
        ref.kernel_summary([{"name": "k"}])


def test_the_lectures_gpukernsum_rows_reproduce_from_totals_and_counts():
    rows = P.lecture_rows()
    assert all(r["consistent"] for r in rows)                         # printed avg within the total's rounding
    assert {r["iterations"] for r in rows} == {100}
    per_iter = {r["what"]: r["per_iteration"] for r in rows}
    # ResNet-50 has 53 batch norms, 49 ReLUs and 16 residual adds per forward pass
    assert per_iter["batch norm (inference)"] == 53 and per_iter["clamp (ReLU)"] == 49
    assert per_iter["add (residual)"] == 16
    gpu_times = [r["gpu_time_ns"] for r in rows]
    assert max(gpu_times) / min(gpu_times) < 1.01                     # every row implies ~1.08 s of GPU time
    assert statistics.mean(gpu_times) == pytest.approx(1.08e9, rel=0.01)
    # the printed totals are the averages times the counts, to three digits
    for r in rows:
        assert float(f"{r['total_from_avg']:.2e}") == r["total_ns"]


def test_the_lectures_layer1_nvtxkernsum_adds_up_to_its_printed_digits():
    total = sum(r[1] for r in P.LECTURE_NVTXKERNSUM)
    rows = [P.KernelRow(name, n, tot, avg, med, lo, hi, sd, 100 * tot / total, "layer1", 1)
            for n, tot, avg, med, lo, hi, sd, name, _ in P.LECTURE_NVTXKERNSUM]
    assert P.arithmetic_problems(rows, rel=0, abs_ns=0.05 * 10) == []
    # layer1 of ResNet-50: 3 bottleneck blocks and a downsample: 10 convolutions, 10 BNs, 9 ReLUs, 3 adds
    counts = {what: n for n, *_, what in P.LECTURE_NVTXKERNSUM}
    assert counts["GEMM"] + counts["implicit-GEMM convolution"] == 10
    assert (counts["batch norm"], counts["clamp (ReLU)"], counts["add"]) == (10, 9, 3)


def _profile(iterations=2, blocks=2):
    model = P.small_resnet(8, blocks=blocks)
    x = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        return P.profile_events(lambda: model(x), device="cpu", iterations=iterations)


def test_a_real_cpu_trace_has_the_lectures_kernels_in_their_ranges(capfd):
    events = _profile(iterations=2, blocks=2)
    err = capfd.readouterr().err
    assert err == "", f"profiling wrote to stderr (a notebook would show it): {err[:200]}"
    names = {e["name"] for e in events}
    assert {"aten::native_batch_norm", "aten::clamp_min", "aten::add"} <= names      # BN, ReLU, residual add
    assert any("conv" in n for n in names)                          # oneDNN's, or another CPU convolution
    assert not names & P.NO_WORK
    rows = {r.name: r for r in ref.kernel_summary(events)}
    # per iteration: stem BN + 2 per block; ReLU: stem + 2 per block; one add per block
    assert rows["aten::native_batch_norm"].instances == 2 * (1 + 2 * 2)
    assert rows["aten::clamp_min"].instances == 2 * (1 + 2 * 2)
    assert rows["aten::add"].instances == 2 * 2
    ranges = P.range_summary(events)
    assert {r.range for r in ranges} >= {"stem", "layer1", "layer2"}
    assert all(r.range_instances == 2 for r in ranges if r.range.startswith("layer"))
    assert P.arithmetic_problems(ref.kernel_summary(events)) == [] and P.arithmetic_problems(ranges) == []
    assert all(e["duration_ns"] >= 0 for e in events)
    assert [e["start_ns"] for e in events] == sorted(e["start_ns"] for e in events)
    text = P.format_table(ranges)
    assert "layer1" in text and "Time (%)" in text


def test_record_returns_the_profiler_whose_events_profile_events_gives(capfd):
    model = P.small_resnet(8, blocks=1)
    x = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        prof = P.record(lambda: model(x), device="cpu", iterations=2)
    assert capfd.readouterr().err == ""
    calls = {e.key: e.count for e in prof.key_averages()}              # torch's own summary of the trace
    assert calls["aten::native_batch_norm"] == 2 * 3 and calls["layer1"] == 2
    events = P.events_from_profile(prof, "cpu")
    assert sum(e["name"] == "aten::native_batch_norm" for e in events) == 2 * 3


def test_nvtx_range_is_a_record_function_where_there_is_no_nvtx():
    from torch.profiler import ProfilerActivity, profile

    with P._quiet_profiler(), profile(activities=[ProfilerActivity.CPU]) as prof:
        with P.nvtx_range("outer"):
            torch.ones(3) + 1
    assert "outer" in {e.name for e in prof.events()}
    assert isinstance(P.nvtx_available(), bool)
    if not CUDA:
        assert P.nvtx_available() is False


NCU_CSV = '''==PROF== Connected to process 4242 (/usr/bin/python3)
==PROF== Profiling "vectorized_elementwise_kernel": 0%....50%....100% - 1 pass
some output of the program
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3","127.0.0.1","void at::native::vectorized_elementwise_kernel<4>(int)","1","7","(128, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","12,894,208"
"0","4242","python3","127.0.0.1","void at::native::vectorized_elementwise_kernel<4>(int)","1","7","(128, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","43,264"
==PROF== Disconnected from process 4242
'''


def test_parse_ncu_csv_reads_metrics_and_skips_everything_else():
    rows = P.parse_ncu_csv(NCU_CSV)
    assert [(r["metric"], r["value"]) for r in rows] == [("dram__bytes_read.sum", 12894208.0),
                                                         ("dram__bytes_write.sum", 43264.0)]
    assert rows[0]["kernel"].startswith("void at::native") and rows[0]["id"] == "0"
    summary = ('"Domain","Range:PL_Type:PL_Value","Kernel Name","Metric Name","Metric Unit","Minimum","Maximum","Average"\n'
               '"<default domain>","forward","void at::native::k","dram__bytes_read.sum","byte","12894208","12894208",'
               '"12894208"\n')
    assert P.parse_ncu_csv(summary)[0]["value"] == 12894208.0
    assert P.parse_ncu_csv("no table here") == []


def test_ncu_command_is_the_lectures_line_cut_to_the_metrics():
    cmd = P.ncu_command(["python3", "train.py"], ncu="/x/ncu")
    assert cmd[0] == "/x/ncu" and cmd[-2:] == ["python3", "train.py"]
    assert "dram__bytes_read.sum,dram__bytes_write.sum" in cmd
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"


def test_ncu_metrics_says_why_when_there_is_no_ncu(monkeypatch):
    monkeypatch.setattr(P, "ncu_path", lambda: None)
    with pytest.raises(P.NcuError, match="not installed"):
        P.ncu_metrics("print(1)")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_a_real_gpu_trace_has_cuda_kernels_in_their_ranges():
    model = P.small_resnet(16, blocks=2).cuda()
    x = torch.randn(4, 3, 32, 32, device="cuda")
    with torch.no_grad():
        events = P.profile_events(lambda: model(x), device="cuda", iterations=3)
    assert events and all(e["device"] == "cuda" for e in events)
    assert not any(e["name"].startswith(("Memcpy", "Memset", "aten::")) for e in events)
    ranges = {e["range"] for e in events}
    assert {"layer1", "layer2"} <= ranges, ranges
    rows = ref.kernel_summary(events)
    assert P.arithmetic_problems(rows) == []
    assert math.isclose(sum(r.time_pct for r in rows), 100.0)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA or P.ncu_path() is None, reason="needs a CUDA device and Nsight Compute (ncu)")
def test_ncu_reads_the_bytes_of_a_copy():
    code = ("import torch\nx = torch.ones(1 << 24, device='cuda')\ny = x * 2\ntorch.cuda.synchronize()\n"
            "torch.cuda.profiler.start()\ny = x * 2\ntorch.cuda.synchronize()\ntorch.cuda.profiler.stop()\n")
    try:
        rows = P.ncu_metrics(code)
    except P.NcuError as exc:
        pytest.skip(f"ncu cannot profile here: {exc}")
    read = sum(r["value"] for r in rows if r["metric"] == "dram__bytes_read.sum")
    assert 0.5 * 4 * (1 << 24) < read < 2 * 4 * (1 << 24)
