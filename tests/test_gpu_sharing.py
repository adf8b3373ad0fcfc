"""Students share a device while they are graded: the lease (real processes, shared and exclusive,
timeouts), and side-by-side grading that changes no score."""
from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import textwrap
import time

import nbformat
import pytest
import torch

from conftest import ROOT, SANDBOX, all_mutants, student_copy
from gpudl import notebooks
from gpudl_instructor import gpulease, pipeline

# A process that takes the lease, says when it got it (CLOCK_MONOTONIC: one clock for every process
# of the machine), holds it, and says when it let it go.
_HOLDER = textwrap.dedent("""
    import importlib.util, json, sys, time
    spec = importlib.util.spec_from_file_location("gpulease", sys.argv[5])   # the module alone: a quick start
    gpulease = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpulease)
    path, mode, hold, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    lease = gpulease.GpuLease(path, timeout=timeout)
    print("ready", flush=True)
    sys.stdin.readline()
    asked = time.monotonic()
    if mode == "upgrade":       # a cell holds the shared lock; its own timed check wants the device alone
        with lease.shared() as cell:
            with lease.exclusive() as granted:
                print(json.dumps({"asked": asked, "got": time.monotonic(), "granted": granted}), flush=True)
                time.sleep(hold)
                print(json.dumps({"released": time.monotonic()}), flush=True)
    else:
        with getattr(lease, mode)() as granted:
            print(json.dumps({"asked": asked, "got": time.monotonic(), "granted": granted}), flush=True)
            time.sleep(hold)
            print(json.dumps({"released": time.monotonic()}), flush=True)
""")


def _start(path, mode, hold, timeout=30.0):
    """A holder process, started and ready; it asks for the lease when told to (``_go``)."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), mode, str(hold), str(timeout),
                             gpulease.__file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _go(*procs):
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()


def _got(proc):
    """The holder's first line: when it asked, when it got the lease, whether it was granted."""
    return json.loads(proc.stdout.readline())


def _released(proc):
    line = json.loads(proc.stdout.readline())
    assert proc.wait(timeout=30) == 0
    return line["released"]


def test_shared_holders_run_together_and_exclusive_waits_for_them(tmp_path):
    path = gpulease.lease_path("0", tmp_path)
    a, b, writer = _start(path, "shared", 1.0), _start(path, "shared", 1.0), _start(path, "exclusive", 0.2)
    _go(a, b)
    ga, gb = _got(a), _got(b)
    assert ga["granted"] and gb["granted"]
    assert abs(ga["got"] - gb["got"]) < 0.5              # both hold it at once: neither waited for the other
    _go(writer)
    gw = _got(writer)
    end = max(_released(a), _released(b))
    assert gw["granted"] and gw["got"] >= end             # the timed section began after both cells ended
    _released(writer)


def test_a_timed_check_stops_new_cells_until_it_is_done(tmp_path):
    path = gpulease.lease_path("0", tmp_path)
    reader, writer, late = _start(path, "shared", 1.0), _start(path, "exclusive", 1.0), _start(path, "shared", 0.0)
    _go(reader)
    _got(reader)
    _go(writer)
    time.sleep(0.3)                                       # the writer now waits for the reader's cell
    _go(late)                                             # a cell that starts while the writer waits
    first_end = _released(reader)
    gw = _got(writer)
    gl = _got(late)
    w_end = _released(writer)
    _released(late)
    assert gw["got"] >= first_end
    assert gl["got"] >= w_end                             # the turnstile: no cell slips in before the timed check


def test_a_cell_upgrades_for_its_own_timed_check_without_deadlock(tmp_path):
    path = gpulease.lease_path("gpu-0", tmp_path)
    other, mine = _start(path, "shared", 1.0), _start(path, "upgrade", 0.2)
    _go(other)
    _got(other)
    _go(mine)                                             # holds shared, then asks for the device alone
    gm = _got(mine)
    other_end = _released(other)
    assert gm["granted"] and gm["got"] >= other_end
    _released(mine)


def test_a_wait_past_the_timeout_goes_on_without_the_lease(tmp_path):
    path = gpulease.lease_path("cpu", tmp_path)
    reader, writer = _start(path, "shared", 2.0), _start(path, "exclusive", 0.0, timeout=0.5)
    again = _start(path, "exclusive", 0.0, timeout=0.5)
    _go(reader)
    _got(reader)
    _go(writer)
    gw = _got(writer)
    assert gw["granted"] is False and 0.45 < gw["got"] - gw["asked"] < 1.5
    _released(writer)
    _released(reader)
    _go(again)                                            # the lock is free again: granted at once
    assert _got(again)["granted"]
    _released(again)


def test_lease_names_and_fractions_are_checked(tmp_path):
    with pytest.raises(gpulease.LeaseError, match="not a device name"):
        gpulease.lease_path("../x", tmp_path)
    with pytest.raises(ValueError, match="fraction"):
        gpulease.memory_fraction_line(1.5)
    assert gpulease.is_timed("gpudl.grading.lab02:matmul_tflops")
    assert not gpulease.is_timed("gpudl.grading.lab02:gemm_flops")


def test_every_check_that_times_work_is_leased():
    """A check module that times real work (gpudl.timing, do_bench) has its timed checks listed."""
    import re

    timed_labs = {name.split(":")[0].rsplit(".", 1)[1] for name in gpulease.TIMED_CHECKS}
    for path in sorted((ROOT / "src" / "gpudl" / "grading").glob("lab*.py")):
        if re.search(r"\btime_cuda\(|\btime_cpu\(|do_bench\(", path.read_text()):
            assert path.stem in timed_labs, f"{path.name} times work but none of its checks is in TIMED_CHECKS"


def test_timed_checks_measure_inside_sections_and_only_the_shared_kind_takes_the_lease(tmp_path):
    """The exclusive lease is held only while a timed check measures: on a GPU machine for its
    "gpu" sections (its simulated, host-timed probes share), on a CPU machine for its "host" ones.
    Every lab 02 timed check measures inside a section, so none goes unleased."""
    import nbformat as nbf

    from gpudl.grading import boundary, lab02
    from gpudl_instructor import checks, inprocess
    from gpudl_instructor.checker import CheckerServer

    taken = []

    class Lease:
        def __init__(self, name):
            self.path = tmp_path / f"{name}.lock"

        @contextlib.contextmanager
        def exclusive(self):
            taken.append(self.path.stem)
            yield True

    for device, kinds in (("cpu", ("host", "gpu")), ("gpu-0", ("gpu", "host"))):
        server = CheckerServer.__new__(CheckerServer)
        server.lease, server.leases = Lease(device), []
        with server._timed("gpudl.grading.lab02:gpu_timer"):
            for kind in kinds:
                with boundary.timed(kind):
                    pass
        assert boundary.TIMED_SECTION is None                       # only while the check runs
        with server._timed("gpudl.grading.lab02:regime"):          # times nothing: no section is leased
            assert boundary.TIMED_SECTION is None
        assert server.leases == [("gpudl.grading.lab02:gpu_timer", True)]
    assert taken == ["cpu", "gpu-0"]
    with pytest.raises(ValueError, match="timed"):
        boundary.timed("disk")

    checks.install()
    lab = "lab02_matmul_flops"
    nb = nbf.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and "check." in c.source)]
    ns = inprocess.execute(nb)
    for name in sorted(n.split(":")[1] for n in gpulease.TIMED_CHECKS if n.startswith("gpudl.grading.lab02:")):
        seen = []
        boundary.TIMED_SECTION = lambda what: (seen.append(what), contextlib.nullcontext())[1]
        try:
            getattr(lab02, name)(ns[name])
        finally:
            boundary.TIMED_SECTION = None
        assert "host" in seen, f"{name} measured outside a timed section"


def test_jobs_and_students_per_gpu():
    # one GPU of 80 GiB, 16 cores, 128 GiB: the cores and the host's memory bound it, not the GPU
    assert pipeline.plan_jobs(gpus=1, cores=16, host_gib=128, gpu_gib=80) == (9, 9)
    assert pipeline.plan_jobs(gpus=1, cores=16, host_gib=128, gpu_gib=80, per_gpu=1) == (1, 1)
    assert pipeline.plan_jobs(gpus=2, cores=16, host_gib=512, gpu_gib=80) == (16, 8)
    assert pipeline.plan_jobs(gpus=0, cores=2, host_gib=24, gpu_gib=0) == (2, 0)
    assert pipeline.plan_jobs(gpus=0, cores=64, host_gib=24, gpu_gib=0) == (3, 0)       # 8 GiB per student
    assert pipeline.plan_jobs(gpus=1, cores=16, host_gib=128, gpu_gib=80, jobs=4) == (4, 4)
    with pytest.raises(ValueError, match="--per-gpu"):
        pipeline.plan_jobs(gpus=1, cores=16, host_gib=128, gpu_gib=80, per_gpu=0)


def test_students_graded_at_once_share_the_cores_thread_pools(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert pipeline.thread_env(9, cores=16) == {name: "1" for name in pipeline.THREAD_VARIABLES}
    assert pipeline.thread_env(4, cores=16)["OMP_NUM_THREADS"] == "4"
    assert pipeline.thread_env(1, cores=16) == {}                 # a student alone keeps every core
    monkeypatch.setenv("OMP_NUM_THREADS", "3")                     # the instructor's own choice stands
    assert pipeline.thread_env(9, cores=16) == {}


def test_bench_grading_all_plans_every_lab_without_grading(monkeypatch):
    from gpudl import benchmarks
    from gpudl_instructor.pipeline import lab_names

    monkeypatch.setenv("GPUDL_DEVICE", "cpu")
    table = benchmarks.run("grading", ["--all", "--dry-run", "--students", "4", "--jobs", "2"])
    assert [r["lab"] for r in table.rows] == lab_names(ROOT)
    assert all(r["jobs"] == 2 and r["batch"] == 4 and r["per GPU"] == "-" for r in table.rows)
    with pytest.raises(ValueError, match="--students must be 2"):
        benchmarks.run("grading", ["--dry-run", "--students", "1"])
    with pytest.raises(ValueError, match="no solutions/lab99"):
        benchmarks.run("grading", ["--dry-run", "--lab", "lab99"])


def test_bench_grading_reads_the_plan_the_grader_chose():
    from gpudl_instructor.benchmarks import grading

    line = "grading 20 submission(s) of lab03_gemm_blocking (26 points), 9 at a time, 9 per GPU, each in a sandbox"
    assert grading._PLAN.search(line).groups() == ("9", "9")
    assert grading._PLAN.search(line.replace(", 9 per GPU", "")).groups() == ("9", None)


SIDE_BY_SIDE = dict(root=ROOT, secret="side-by-side", progress=False, echo=lambda *_: None)


def _class_of(tmp_path, lab: str, mutants: dict[str, str]) -> tuple[dict, object]:
    """The solution as "ada" and each named mutant of ``lab`` as its student, written under tmp_path/subs."""
    good = student_copy(lab)
    bank = {m.name: m for m in all_mutants() if m.lab == lab}
    class_ = {"ada": good}
    for sid, name in mutants.items():
        m = bank[name]
        class_[sid] = notebooks.replace_source(good, m.cell, m.planted(notebooks.find_cell(good, m.cell).source))
    subs = tmp_path / "subs"
    for sid, nb in class_.items():
        (subs / sid).mkdir(parents=True)
        nbformat.write(nb, str(subs / sid / f"{lab}.ipynb"))
    return class_, subs


def _graded_alone(tmp_path, lab: str, class_: dict) -> dict:
    """Each student of ``class_`` graded in a class of their own: {student: StudentResult}."""
    alone = {}
    for sid, nb in class_.items():
        one = tmp_path / f"only-{sid}"
        (one / sid).mkdir(parents=True)
        nbformat.write(nb, str(one / sid / f"{lab}.ipynb"))
        alone.update({r.student: r for r in pipeline.grade(lab, one, tmp_path / f"out-{sid}", jobs=1, **SIDE_BY_SIDE)})
    return alone


LAB = "lab02_matmul_flops"      # its timer and FLOP/s checks time work: they take the exclusive lease


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOX, reason="grading needs the sandbox (bubblewrap)")
def test_students_graded_side_by_side_score_as_when_graded_alone(tmp_path):
    """Correct and wrong submissions of lab 02 graded two at a time (cells under the shared lease, the
    timing checks under the exclusive one) score exactly what each scores graded alone."""
    class_, subs = _class_of(tmp_path, LAB, {"bo": "cpu_timer__mean", "cy": "gpu_timer__no_synchronize"})
    together = {r.student: r for r in pipeline.grade(LAB, subs, tmp_path / "together", jobs=2, **SIDE_BY_SIDE)}
    alone = {sid: r.scores for sid, r in _graded_alone(tmp_path, LAB, class_).items()}
    assert {sid: r.scores for sid, r in together.items()} == alone
    assert sum(alone["ada"].values()) == 32
    assert sum(alone["bo"].values()) == 32 - 4 and alone["bo"]["test_cpu_timer"] == 0
    assert sum(alone["cy"].values()) == 32 - 6 and alone["cy"]["test_gpu_timer"] == 0
    # side by side, each of ada's timing checks (visible and hidden: 3 test cells) had the device alone
    assert together["ada"].marks["timed_alone"] == 6 and together["ada"].marks["timed_shared"] == 0


# On a GPU machine the kernels of lab 03 (Triton) and lab 04 (numba-cuda) compile and run on the device that
# the students graded at once share; on a CPU they run in the interpreter and the simulator (test_labs).
GPU_LABS = {"lab03_gemm_blocking": "triton_matmul__k_unmasked",
            "lab04_cuda_programming_model": "stencil__halo_not_loaded"}


@pytest.mark.slow
@pytest.mark.skipif(not SANDBOX, reason="grading needs the sandbox (bubblewrap)")
@pytest.mark.skipif(not torch.cuda.is_available(), reason="the kernels on a GPU: needs one")
@pytest.mark.parametrize("lab", sorted(GPU_LABS))
def test_gpu_kernels_graded_side_by_side_score_as_when_graded_alone(tmp_path, lab):
    """A correct and a wrong submission of a kernel lab graded at once on one GPU score exactly what
    each scores graded alone, the correct one full marks, the wrong one less."""
    name = GPU_LABS[lab]
    class_, subs = _class_of(tmp_path, lab, {"bo": name})
    together = {r.student: r for r in pipeline.grade(lab, subs, tmp_path / "together", jobs=2, per_gpu=2,
                                                     **SIDE_BY_SIDE)}
    alone = _graded_alone(tmp_path, lab, class_)
    assert {sid: r.scores for sid, r in together.items()} == {sid: r.scores for sid, r in alone.items()}
    assert sum(alone["ada"].scores.values()) == alone["ada"].max_score
    assert sum(alone["bo"].scores.values()) < alone["bo"].max_score, f"mutant {name} kept full marks"


# --- honest timing: a rate judged by the median of interleaved rounds, an inconclusive one measured again

def _rounds(ratios):
    """A measure() that gives the student's figure at these ratios to gpudl's 100 TFLOP/s, round by round."""
    seen = list(ratios)
    calls = []

    def measure():
        calls.append(1)
        return 100.0 * seen.pop(0), 100.0

    return measure, calls


def test_a_correct_rate_disturbed_now_and_then_is_never_failed():
    from gpudl.grading import lab02

    measure, calls = _rounds([1.0, 0.62, 1.03])                   # one disturbed round of three: the median holds
    lab02._judge_rates(measure, "matmul_tflops(2048, 'bf16', ...) on the GPU", "gpudl measures")
    assert len(calls) == 3
    measure, calls = _rounds([0.68, 0.66, 0.7, 0.98, 1.01, 0.97])  # a busy spell: inconclusive, measured again
    lab02._judge_rates(measure, "w", "gpudl measures")
    assert len(calls) == 6
    measure, calls = _rounds([0.68] * 9)                          # inconclusive every time: passes, not failed
    lab02._judge_rates(measure, "w", "gpudl measures")
    assert len(calls) == 9


@pytest.mark.parametrize("ratio, hint", [(0.5, "n^3 multiply-adds are 2 n^3 FLOPs"), (1000.0, "GFLOP/s reported"),
                                         (0.3, "TFLOP/s = 2 n^3 / seconds")])
def test_a_wrong_rate_fails_at_once_with_its_message(ratio, hint):
    from gpudl.grading import GradingError, lab02

    measure, calls = _rounds([ratio] * 9)
    with pytest.raises(GradingError, match=re.escape(hint)):
        lab02._judge_rates(measure, "w", "gpudl measures")
    assert len(calls) == 3                                        # one set of rounds: a wrong figure is not retried


def _speed_batches(ratios):
    """timed_rounds() for lab 07's speed check: batches of 3 rounds with the kernel at these speeds
    relative to SDPA's 1 ms, one batch per call."""
    batches = [list(ratios[i:i + 3]) for i in range(0, len(ratios), 3)]
    calls = []

    def timed_rounds():
        calls.append(1)
        rs = batches.pop(0)
        return {"sdpa": [1e-3] * len(rs), "mine": [1e-3 / r for r in rs]}

    return timed_rounds, calls


@pytest.mark.parametrize("ratios, batches", [([0.7, 0.1, 0.72], 1),               # one disturbed round: the median holds
                                              ([0.3, 0.2, 0.3, 0.69, 0.7, 0.71], 2),  # inconclusive, then clean
                                              ([0.3] * 9, 3)])                   # inconclusive three times: passes
def test_an_honest_attention_kernel_on_a_busy_gpu_keeps_its_points(ratios, batches):
    """lab 07's kernel speed: the median of rounds timed in turns; a batch that is neither clearly fast
    enough nor clearly too slow is timed again, and never failed for it (the solution lost 2 points in
    2 of 9 gradings on an H100 shared by 8 students while a single measurement of each decided)."""
    from gpudl.grading import lab07

    timed_rounds, calls = _speed_batches(ratios)
    lab07._judge_speed(timed_rounds)
    assert len(calls) == batches


def test_a_slow_attention_kernel_fails_at_once():
    from gpudl.grading import GradingError, lab07

    timed_rounds, calls = _speed_batches([0.1, 0.12, 0.09])
    with pytest.raises(GradingError, match=r"your kernel takes 10.00 ms, 10.0x the 1.00 ms .* median of 3 rounds"):
        lab07._judge_speed(timed_rounds)
    assert len(calls) == 1


def test_lab07_times_the_kernel_and_sdpa_in_turns(monkeypatch):
    """The student-side timer of lab 07 alternates the order round by round and returns each median."""
    from gpudl import bench
    from gpudl.grading import lab07

    order = []

    class Timing:
        median = 1e-3

    def fake_time_cuda(fn, budget_s, what):
        order.append("sdpa" if "scaled_dot_product" in what else "mine")
        fn()
        return Timing()

    monkeypatch.setattr(bench, "time_cuda", fake_time_cuda)
    q = torch.randn(2, 8, 4)
    seen = lab07._time_kernel(lambda q, k, v: q * 2, q, q, q, 3)
    assert torch.equal(seen["out"], q * 2)
    assert order == ["mine", "sdpa", "sdpa", "mine", "mine", "sdpa"]
    assert seen["mine"] == [1e-3] * 3 and seen["sdpa"] == [1e-3] * 3


def test_the_readme_slurm_script_and_actions_workflow_parse():
    import yaml

    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(\w+)\n(.*?)```", readme, re.S)
    script = next(body for lang, body in blocks if lang == "bash" and "#SBATCH" in body)
    res = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    first, last = map(int, re.search(r"#SBATCH --array=(\d+)-(\d+)", script).groups())
    assert f"N={last - first + 1}" in script and "--shard \"$K/$N\"" in script and "--gres=gpu:1" in script
    assert "SLURM_ARRAY_TASK_ID + 1" in script and "--dependency=afterok:$jid" in script
    flow = yaml.safe_load(next(body for lang, body in blocks if lang == "yaml" and "workflow_dispatch" in body))
    jobs = flow["jobs"]
    shards = jobs["shard"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    grade = next(step for step in jobs["shard"]["steps"] if "gpudl grade" in step.get("run", ""))
    assert f'--shard "$SHARD/{len(shards)}"' in grade["run"] and grade["env"]["SHARD"] == "${{ matrix.shard }}"
    assert "self-hosted" in jobs["shard"]["runs-on"] and "gpu" in jobs["shard"]["runs-on"]
    assert jobs["merge"]["needs"] == "shard"
    assert any("gpudl merge shards/shard-*" in step.get("run", "") for step in jobs["merge"]["steps"])
    uploads = [s for s in jobs["shard"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads and uploads[0]["with"]["name"] == "shard-${{ matrix.shard }}"


def test_the_memory_bound_waits_for_cuda_and_leaves_no_name_behind():
    line = gpulease.memory_fraction_line(0.3)
    code = ("import torch\nbefore = len(torch.cuda._queued_calls)\nns = {}\n"
            f"exec({line!r}, ns)\n"
            "print(len(torch.cuda._queued_calls) - before, sorted(k for k in ns if k != '__builtins__'), "
            "torch.cuda.is_initialized())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"CUDA_VISIBLE_DEVICES": ""},
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["1", "[]", "False"]     # queued for when CUDA starts; nothing started, nothing bound


def test_an_out_of_memory_error_names_the_students_share():
    from gpudl_instructor import autograde

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = big()", outputs=[nbformat.v4.new_output(
        "error", ename="OutOfMemoryError", evalue="CUDA out of memory. Tried to allocate 40.00 GiB", traceback=[])]),
        nbformat.v4.new_code_cell("y = 1", outputs=[nbformat.v4.new_output(
            "error", ename="ValueError", evalue="bad", traceback=[])])]
    autograde._JOB.clear()
    autograde._JOB.update(gpu_gib=80.0)
    try:
        autograde._note_out_of_memory(nb, 0.225)
    finally:
        autograde._JOB.clear()
    oom, other = (c.outputs[0] for c in nb.cells)
    assert "may allocate 18.0 GiB of it (22%)" in oom.evalue and oom.evalue.startswith("CUDA out of memory")
    assert other.evalue == "bad"


def test_a_timer_delayed_now_and_then_is_measured_again_and_a_wrong_one_fails():
    from gpudl.grading import GradingError, lab02

    probe = dict(label="work of 10 ms", seconds=0.01)
    rounds = [(0.019, 0.0101, 6), (0.021, 0.0105, 6), (0.0103, 0.0102, 6), (0.0101, 0.0101, 6)]
    seen = list(rounds)
    assert lab02._judge_timer(lambda: seen.pop(0), probe, gpu=False) == 6      # two delayed rounds, then a clean one
    assert len(seen) == 1
    calls = []

    def mean_over_a_slow_call():
        calls.append(1)
        return 0.02, 0.0101, 6

    with pytest.raises(GradingError, match="Too slow"):
        lab02._judge_timer(mean_over_a_slow_call, probe, gpu=False)
    assert len(calls) == 5


def test_a_lab_of_several_gpus_shows_each_student_every_gpu(monkeypatch, tmp_path):
    """Lab 10's checks start a process per GPU (NCCL): a student pinned to one GPU would only ever be
    checked with gloo. Its students see every GPU and share one lease for the set; other labs'
    students are spread over the GPUs, one lease per GPU."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert pipeline.placement("lab10_multi_gpu", 2, 8, 5) == (None, "gpu-2_3")
    assert pipeline.placement("lab10_multi_gpu", 1, 8, 5) == (0, "gpu-2")      # one GPU: as any lab
    assert pipeline.placement("lab03_gemm_blocking", 2, 8, 5) == (1, "gpu-3")
    assert pipeline.placement("lab03_gemm_blocking", 2, 1, 0) == (None, "gpu-2")    # alone: every GPU
    assert pipeline.placement("lab10_multi_gpu", 0, 2, 1) == (None, "cpu")
    from gpudl_instructor.gpulease import lease_path
    assert lease_path(pipeline.placement("lab10_multi_gpu", 2, 8, 5)[1], tmp_path).name == "gpu-2_3.lock"
    monkeypatch.setattr(pipeline, "_host_gib", lambda: 256.0)
    monkeypatch.setattr(pipeline, "_gpu_gib", lambda: 80.0)
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 32)
    assert pipeline.plan_lab("lab03_gemm_blocking", 2) == (18, 9)        # 9 a GPU, on each of the two
    assert pipeline.plan_lab("lab10_multi_gpu", 2) == (9, 9)             # 9 at once, each on both GPUs
    assert pipeline.whole_machine("lab10_multi_gpu", 2) and not pipeline.whole_machine("lab09_profiling_and_inference", 2)


def test_the_grading_server_imports_no_lab_that_would_start_cuda(tmp_path, monkeypatch):
    """The server students' processes fork from imports the lab modules, on a GPU machine too, but
    never one whose import starts CUDA (a CUDA started before the fork is lost to every student)."""
    import torch

    from gpudl_instructor import autograde

    pkg = tmp_path / "fakelabs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "lab01.py").write_text("VALUE = 1\n")
    (pkg / "lab02.py").write_text("import torch\ntorch.cuda._lazy_init()\n")   # reads a spec from the device
    (pkg / "helpers.py").write_text("raise AssertionError('not a lab: never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    original = torch.cuda._lazy_init
    import fakelabs

    assert autograde.import_labs(fakelabs) == ["lab01"]
    assert "fakelabs.lab01" in sys.modules and "fakelabs.lab02" not in sys.modules
    assert torch.cuda._lazy_init is original
