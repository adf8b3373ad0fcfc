"""Checks for lab10_multi_gpu: the visible cases, the examples of the released notebook.

``check.NAME(fn)`` runs them; ``check.NAME(fn, hidden=True)`` the instructor's hidden cases (other
sizes, sources, chunk counts, world sizes and models) when the notebook is graded. Each check is
its cases and a comparison (``_compare_NAME``) that the hidden cases reuse, so they teach alike.

The collectives run where the student's code lives: ``run_on_ranks`` (``@student_side``) starts k
workers with ``gpudl.collectives.launch`` (gloo for k = 2, 3, 4; also NCCL where there are k
GPUs), runs the student's function on every rank under the guard and ``traffic()`` (the bytes and
messages each rank really sends, any collective it calls) and returns plain data. A worker gets
everything from its case (inputs, the bucket plan); the expected values stay in the check. A
deadlocked rank is stopped ``TIMEOUT_S`` seconds after the ranks joined; nothing hangs.

Where the expected values come from: ``cost_models``, the store recorded at release
(``expected("lab10")``); the ring collectives, torch on the checker's side (the source's tensor,
the sum over ranks: what ``torch.distributed``'s collectives, forbidden to the student, leave) and
the store for the bytes each rank sends (``ring_bytes_sent``); ``plan_buckets``, DDP's own
bucketing (``torch.distributed._compute_bucket_assignment_by_size``, forbidden to the student);
``data_parallel_step``, one process on the whole batch with ``torch.optim.SGD`` (``train_single``);
the question, only whether the answer is well-formed. The course edition holds no answer.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

from ..collectives import data_parallel, ring
from ..collectives.cost import LECTURE_EXAMPLE
from ..references import ReferenceUsedError
from . import GradingError, assert_close, call_student, choice_letters, exercise, question
from .boundary import run_student, student_side
from .expected import expected

LAB = "lab10"
TIMEOUT_S = 15.0          # after all ranks have joined: tiny tensors take milliseconds

# What the hand-written collectives must do without: torch's collectives. They are blocked by
# ``_without`` (not ``guard``: torch.distributed's functions share one decorator's code object,
# which guard's profile hook cannot tell from dist.send's); a collective reached another way still
# shows in ``traffic()``'s count of the process group's collectives.
_TORCH_COLLECTIVES = tuple(f"torch.distributed.{n}" for n in (
    "broadcast", "all_reduce", "reduce", "reduce_scatter", "reduce_scatter_tensor", "all_gather",
    "all_gather_into_tensor", "all_to_all", "all_to_all_single", "broadcast_object_list", "all_gather_object",
    "scatter", "gather")) + tuple(f"torch.distributed._functional_collectives.{n}" for n in (
    # the functional collectives: the same operations, returning new tensors
    "all_reduce", "all_gather_tensor", "reduce_scatter_tensor", "all_to_all_single", "broadcast",
    "all_reduce_coalesced", "all_gather_into_tensor_coalesced", "reduce_scatter_tensor_coalesced", "permute_tensor",
    "all_gather_tensor_autograd", "reduce_scatter_tensor_autograd", "all_reduce_inplace", "all_gather_inplace"))
# The course edition's picture of the pipelined broadcast: who sends which piece in which step.
_SCHEDULE = "gpudl.collectives.cost.ring_broadcast_schedule"
_COST_FORBID = (_SCHEDULE,)
_BROADCAST_FORBID = (*_TORCH_COLLECTIVES, _SCHEDULE)
_REDUCTION_FORBID = _TORCH_COLLECTIVES
# DDP's bucketing, the oracle of plan_buckets; DDP, which does the whole step.
_DDP_BUCKETING = "torch.distributed._compute_bucket_assignment_by_size"
_DP_FORBID = ("torch.nn.parallel.DistributedDataParallel",)

_DEADLOCK = ("a deadlock: a rank waits for a message that no rank sends. Every send needs a matching receive on its "
             "peer: each rank sends to its right neighbour (rank + 1) % k and receives from its left neighbour "
             "(rank - 1) % k (the same on every rank), posts the send and the receive of a step together "
             "(dist.batch_isend_irecv, or isend/irecv and then wait on both: a blocking send first on every rank waits "
             "forever), and every rank runs the same number of steps.")


# --- the student's side: k workers --------------------------------------------------------------

def _resolve(names: list[str]) -> list[str]:
    """The dotted names the guard forbids here: those that exist (``torch.distributed.NAME`` is left
    to ``_without``; the functional collectives, a module further down, are the guard's)."""
    from .forbidden import _resolve as owner_of

    out = []
    for name in names:
        with contextlib.suppress(ImportError, AttributeError, ValueError):
            owner, attr = owner_of(name)
            if not (name.startswith("torch.distributed.") and name.count(".") == 2) and hasattr(owner, attr):
                out.append(name)
    return out


@contextlib.contextmanager
def _without(names: list[str], label: str) -> Iterator[None]:
    """While the block runs, ``torch.distributed.NAME`` for each "torch.distributed.NAME" raises."""
    import torch.distributed as dist

    saved = {}

    def blocker(name: str) -> Callable:
        def blocked(*args: Any, **kwargs: Any) -> None:
            raise ReferenceUsedError(f"your code calls torch.distributed.{name}, which {label} asks you to do "
                                     "without: write it with point-to-point sends and receives.")
        return blocked

    for dotted in names:
        name = dotted.removeprefix("torch.distributed.")
        if dotted.startswith("torch.distributed.") and hasattr(dist, name):
            saved[name] = getattr(dist, name)
            setattr(dist, name, blocker(name))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(dist, name, fn)


def _count(value: Any) -> Any:
    """The student's returned byte count as plain data (an int, or a description of what came)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return f"a {type(value).__name__}"
    if isinstance(value, (int, np.integer)) or (isinstance(value, (float, np.floating)) and float(value).is_integer()):
        return int(value)
    return "None" if value is None else f"a {type(value).__name__} ({value!r:.40})"


def _collective_worker(rank: int, k: int, fn: Callable, name: str, cases: list[dict], forbid: list[str],
                       label: str) -> list[dict]:
    from ..collectives import traffic, worker_device
    from . import guard

    device = worker_device()
    records = []
    for case in cases:
        t = case["inputs"][rank].to(device).clone()
        with guard(*_resolve(forbid), label=label), _without(forbid, label), traffic() as seen:
            returned = fn(t, case["src"], case["chunks"]) if name == "broadcast" else fn(t)
        if device.type == "cuda":
            torch.cuda.synchronize()
        records.append({"out": t.cpu(), "returned": _count(returned), "sent": seen.sent_bytes, "sends": seen.sends,
                        "log": [op for op, _, nbytes in seen.log if nbytes], "collectives": sorted(seen.calls)})
    return records


def _ddp_worker(rank: int, k: int, fn: Callable, name: str, cases: list[dict], forbid: list[str],
                label: str) -> list[dict]:
    from ..collectives import traffic, worker_device
    from . import guard

    device = worker_device()
    records = []
    for case in cases:
        cfg, buckets = case["config"], case["buckets"]
        model = data_parallel.make_model(cfg, device)
        x, y = data_parallel.make_batch(cfg, 0, device)
        xs, ys = data_parallel.shard(x, rank, k), data_parallel.shard(y, rank, k)
        with guard(*_resolve(forbid), label=label), _without(forbid, label), traffic() as seen:
            fn(model, xs, ys, cfg.lr, buckets)
        params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
        records.append({"params": params, "buckets": len(buckets), "allreduce": seen.calls.get("allreduce", 0),
                        "collectives": sorted(seen.calls)})
    return records


def _backends(k: int) -> list[str]:
    from .. import hardware

    gpus = torch.cuda.device_count() if hardware.device() == "cuda" else 0
    return ["gloo"] + (["nccl"] if gpus >= k else [])


@student_side
def run_on_ranks(fn: Callable, name: str, groups: list[dict], forbid: list[str], label: str,
                 timeout: float) -> dict:
    """In the student's process: for each group {"k", "cases"}, start k workers (gloo, and NCCL
    where there are k GPUs) that run ``fn`` on every case; their records, or what went wrong."""
    from ..collectives import LaunchError, WorkerError, WorkerTimeout, launch

    worker = _ddp_worker if name == "ddp_step" else _collective_worker
    runs = []
    for group in groups:
        k = group["k"]
        for backend in _backends(k):
            where = {"backend": backend, "k": k}
            try:
                ranks = launch(worker, k, fn, name, group["cases"], forbid, label, backend=backend, timeout=timeout,
                               echo=False)
            except WorkerTimeout as exc:
                return {"error": "timeout", **where, "ranks": list(exc.ranks), "joined": exc.joined,
                        "message": str(exc)}
            except WorkerError as exc:
                return {"error": "raised", **where, "rank": exc.rank, "type": exc.exc_type,
                        "message": exc.exc_message if exc.exc_type else str(exc)}
            except LaunchError as exc:
                return {"error": "launch", **where, "message": str(exc)}
            runs.append({**where, "ranks": ranks})
    return {"runs": runs}


# --- the checker's side ---------------------------------------------------------------------------

def _on(run: dict) -> str:
    return f"{run['k']} ranks ({run['backend']})"


def _run(fn: Any, name: str, groups: list[dict], forbid: tuple[str, ...], label: str) -> list[dict]:
    __tracebackhide__ = True
    refs = [f for f in forbid if ":" in f]        # the workers enforce the rest
    res = run_student(run_on_ranks, fn, name, groups, list(forbid), label, TIMEOUT_S, forbid=refs, label=label,
                      what=getattr(fn, "__name__", name))
    if not isinstance(res, dict) or ("runs" not in res and "error" not in res):
        raise GradingError(f"the workers for {label} did not report back")
    if "error" not in res:
        return res["runs"]
    where = _on(res)
    if res["error"] == "timeout" and res["joined"]:
        raise GradingError(f"on {where}, {label} did not finish within {TIMEOUT_S:g} s: ranks {res['ranks']} were "
                           f"still waiting. That is {_DEADLOCK} The workers were stopped.")
    if res["error"] == "timeout":
        raise GradingError(f"on {where}, the workers did not start within the time limit (an overloaded machine?): "
                           f"{res['message']}")
    if res["error"] == "raised":
        if res["type"] == "ReferenceUsedError":
            raise ReferenceUsedError(res["message"])
        if res["type"] == "NotImplementedError":
            raise GradingError(f"{label} is not implemented yet (it raised NotImplementedError)")
        if not res["type"]:                        # it died: the launcher's message says how
            mismatch = "doesn't match expected size" in res["message"]
            raise GradingError(f"on {where}, {res['message']}" + (
                "\nA message arrived whose size differs from the buffer posted to receive it: sender and receiver must "
                "agree on which piece (of which size) travels in each step." if mismatch else ""))
        raise GradingError(f"on {where}, rank {res['rank']} raised {res['type']}: {res['message']}")
    raise GradingError(f"on {where}, the workers could not be started: {res['message']}")


def _group_by_group(fn: Any, name: str, groups: list[dict], forbid: tuple[str, ...], label: str) -> Iterator[dict]:
    """The runs of ``_run``, one group of ranks at a time: the caller judges a group's runs before
    the next group's workers start, so a wrong answer costs one launch, not one per group."""
    __tracebackhide__ = True
    for group in groups:
        yield from _run(fn, name, [group], forbid, label)


def _ints(g: np.random.Generator, n: int) -> torch.Tensor:
    """Integer-valued floats: sums over ranks are exact, so results compare exactly."""
    return torch.tensor(g.integers(-99, 100, size=n), dtype=torch.float32)


def _sizes(numel: int, parts: int) -> list[int]:
    return [b - a for a, b in ring.chunk_bounds(numel, parts)]


def _split_hint(numel: int, k: int) -> str:
    if numel % k == 0:
        return ""
    return (f" With N = {numel} and k = {k} the chunks have {_sizes(numel, k)} elements, as torch.tensor_split cuts "
            f"them: the first N % k chunks are one longer. With N // k = {numel // k} for every chunk, the last "
            f"{numel % k} element(s) belong to no chunk.")


def _first_diff(got: torch.Tensor, want: torch.Tensor) -> str:
    bad = (got != want).nonzero().flatten().tolist()
    shown = ", ".join(f"[{i}] got {got[i].item():g}, expected {want[i].item():g}" for i in bad[:3])
    return f"{len(bad)} of {want.numel()} elements differ ({shown})"


def _check_returned(rec: dict, rank: int, run: dict, label: str) -> None:
    __tracebackhide__ = True
    if rec["returned"] != rec["sent"]:
        raise GradingError(f"on {_on(run)}, rank {rank}'s {label} returned {rec['returned']}, but it sent "
                           f"{rec['sent']} bytes: return the bytes this rank sent, numel() * element_size() summed "
                           "over every tensor it sends (a float32 element is 4 bytes).")


def _check_no_collectives(rec: dict, rank: int, run: dict, label: str) -> None:
    __tracebackhide__ = True
    if rec["collectives"]:
        raise GradingError(f"on {_on(run)}, rank {rank}'s {label} called the process group's "
                           f"{', '.join(rec['collectives'])}: write it with point-to-point sends and receives only.")


def _groups(cases: list[dict]) -> list[dict]:
    by_k: dict[int, list[dict]] = {}
    for case in cases:
        by_k.setdefault(case["k"], []).append(case)
    return [{"k": k, "cases": cs} for k, cs in sorted(by_k.items())]


def _case_label(case: dict) -> str:
    extra = f", src={case['src']}, chunks={case['chunks']}" if case.get("chunks") else ""
    return f"N={case['numel']} elements{extra}"


# --- 1. cost models ---------------------------------------------------------------------------------

@exercise
def cost_models(broadcast_time: Any, all_reduce_time: Any, bus_factor: Any) -> None:
    """``ring_broadcast_time(n_bytes, k, bandwidth, chunks=1)``, ``ring_all_reduce_time(n_bytes, k,
    bandwidth, latency=0.0)``, ``bus_bandwidth_factor(collective, k)``."""
    __tracebackhide__ = True
    ex = LECTURE_EXAMPLE
    bc = [(ex["n_bytes"], ex["k"], ex["bandwidth"], 1, "the lecture's 4 GPUs, 100 MB, 12 GB/s, unpipelined"),
          (ex["n_bytes"], ex["k"], ex["bandwidth"], 4, "the same in S = 4 chunks"),
          (ex["n_bytes"], ex["k"], ex["bandwidth"], 100, "the same in S = 100 chunks"),
          (1e6, 2, 50e9, 1, "2 GPUs, 1 MB")]
    ar = [(256e6, 2, 100e9, 0.0), (256e6, 8, 100e9, 0.0), (64e6, 4, 25e9, 5e-6)]
    bus = [("all_reduce", 8), ("all_gather", 4), ("reduce_scatter", 2), ("broadcast", 8)]
    _compare_cost_models((broadcast_time, all_reduce_time, bus_factor), bc, ar, bus, expected(LAB))


def _compare_cost_models(fns: Sequence[Any], bc: list, ar: list, bus: list, ref: Any) -> None:
    """``fns``: the three models; ``bc``: (n, k, B, S, text); ``ar``: (n, k, B, alpha); ``bus``:
    (collective, k); ``ref``: ``ring_broadcast_time``, ``ring_all_reduce_time``, ``bus_bandwidth_factor``."""
    __tracebackhide__ = True
    broadcast_time, all_reduce_time, bus_factor = fns
    for n, k, bw, s, text in bc:
        what = f"ring_broadcast_time({n:g}, {k}, {bw:g}, chunks={s})" + (f" ({text})" if text else "")
        got = call_student(broadcast_time, n, k, bw, s, forbid=_COST_FORBID, label="the broadcast model", what=what)
        want = ref.ring_broadcast_time(n, k, bw, s)
        hints = {n * (s + k - 1) / (s * bw) / want: "one step too many: a ring of k GPUs has k - 1 receivers, so "
                                                    "the pipeline takes S + k - 2 steps (k - 1 unpipelined)",
                 n * k / bw / want: "the unpipelined ring takes k - 1 hops, not k"}
        _close(got, want, what, hints)
    for n, k, bw, alpha in ar:
        what = f"ring_all_reduce_time({n:g}, {k}, {bw:g}, latency={alpha:g})"
        got = call_student(all_reduce_time, n, k, bw, alpha, forbid=_COST_FORBID, label="the all-reduce model",
                           what=what)
        want = ref.ring_all_reduce_time(n, k, bw, alpha)
        hints = {2 * k * (alpha + n / (k * bw)) / want: "k steps per phase instead of k - 1",
                 (k - 1) * (alpha + n / (k * bw)) / want: "only one phase: an all-reduce is a reduce-scatter and "
                                                         "then an all-gather, 2 (k - 1) steps",
                 2 * (k - 1) * (alpha + n / bw) / want: "each step moves a chunk of N / k bytes, not all N"}
        _close(got, want, what, hints)
    for collective, k in bus:
        what = f"bus_bandwidth_factor({collective!r}, {k})"
        got = call_student(bus_factor, collective, k, forbid=_COST_FORBID, label="the bus bandwidth factor",
                           what=what)
        want = ref.bus_bandwidth_factor(collective, k)
        _close(got, want, what, {k / (k - 1): "k - 1 of the k chunks cross each link, not k: the factor has k - 1"})


def _close(got: Any, want: float, what: str, hints: dict[float, str]) -> None:
    __tracebackhide__ = True
    try:
        value = float(got)
    except (TypeError, ValueError):
        raise GradingError(f"{what} returned {got!r}: return a number (seconds, or a ratio)") from None
    if abs(value - want) <= 1e-9 * abs(want) + 1e-15:
        return
    for ratio, text in hints.items():
        if want and abs(value / want - ratio) <= 1e-6 * abs(ratio) and abs(ratio - 1) > 1e-9:
            raise GradingError(f"{what} is {value:.6g}, expected {want:.6g}: {text}.")
    assert_close(value, want, name=what)


# --- 2. the pipelined ring broadcast -------------------------------------------------------------------

def _broadcast_cases(g: np.random.Generator, specs: list[tuple[int, int, int, int]]) -> list[dict]:
    """(k, N, src, S) -> a case: integer-valued data on the source, -1 everywhere else."""
    cases = []
    for k, n, src, s in specs:
        data = _ints(g, n)
        inputs = [data.clone() if r == src else torch.full((n,), -1.0) for r in range(k)]
        cases.append({"k": k, "numel": n, "src": src, "chunks": s, "inputs": inputs, "data": data})
    return cases


@exercise
def ring_broadcast(fn: Any) -> None:
    """``fn(tensor, src, chunks)``: in place on every rank, returns the bytes this rank sent."""
    __tracebackhide__ = True
    specs = [(2, 6, 0, 1), (2, 7, 1, 3), (3, 10, 1, 3), (4, 13, 2, 4), (4, 9, 0, 1)]
    _compare_ring_broadcast(fn, _broadcast_cases(np.random.default_rng(10), specs), expected(LAB))


def _compare_ring_broadcast(fn: Any, cases: list[dict], ref: Any) -> None:
    """``ref.ring_bytes_sent``: the bytes each rank of a ring broadcast sends."""
    __tracebackhide__ = True
    runs = _group_by_group(fn, "broadcast", _groups(cases), _BROADCAST_FORBID, "the ring broadcast")
    for run in runs:
        mine = [c for c in cases if c["k"] == run["k"]]
        for i, case in enumerate(mine):
            model = ref.ring_bytes_sent("broadcast", case["numel"], case["k"], 4, case["src"])
            for rank in range(run["k"]):
                _judge_broadcast(run["ranks"][rank][i], rank, case, run, model[rank])


def _judge_broadcast(rec: dict, rank: int, case: dict, run: dict, model: int) -> None:
    __tracebackhide__ = True
    k, n, src, s = case["k"], case["numel"], case["src"], case["chunks"]
    where = f"on {_on(run)}, {_case_label(case)}, rank {rank}"
    got, want = rec["out"], case["data"]
    if got.shape != want.shape:
        raise GradingError(f"{where}: the tensor changed shape to {tuple(got.shape)}: work in place")
    if not torch.equal(got, want):
        bounds = ring.chunk_bounds(n, s)
        for c, (a, b) in enumerate(bounds):
            if torch.equal(got[a:b], want[a:b]):
                continue
            moved = [d for d, (a2, b2) in enumerate(bounds) if d != c and b2 - a2 == b - a and b > a
                     and torch.equal(got[a:b], want[a2:b2])]
            if moved:
                raise GradingError(f"{where}: piece {c} (elements {a}..{b - 1}) holds piece {moved[0]}'s values: put "
                                   "each received piece back at its own offset, in order.")
            if torch.equal(got[a:b], torch.full((b - a,), -1.0)):
                raise GradingError(f"{where}: piece {c} (elements {a}..{b - 1}) never arrived (it still holds this "
                                   "rank's old values): every rank but the source receives every piece.")
        raise GradingError(f"{where}: the result is not the source's tensor: {_first_diff(got, want)}.")
    _check_no_collectives(rec, rank, run, "broadcast")
    _check_returned(rec, rank, run, "broadcast")
    last = (src - 1) % k
    if rec["sent"] != model:
        raise GradingError(f"{where}: sent {rec['sent']} bytes; in a ring broadcast every rank but the last "
                           f"(rank {last}, (src - 1) % k) forwards the whole message once, N = {4 * n} bytes here, "
                           f"and rank {last} sends nothing.")
    pieces = sum(b > a for a, b in ring.chunk_bounds(n, s))
    if rank != last and rec["sends"] != pieces:
        raise GradingError(f"{where}: sent {rec['sends']} message(s); pipelined in {s} chunks it sends each of the "
                           f"{pieces} non-empty pieces as a message of its own, so that the next rank can forward "
                           "piece c while this one sends piece c + 1.")
    kinds = rec["log"]
    if rank not in (src, last) and pieces >= 2 and "send" in kinds and "recv" in kinds:
        if kinds.index("send") > len(kinds) - 1 - kinds[::-1].index("recv"):
            raise GradingError(f"{where}: received every piece before forwarding the first: no pipelining. Forward "
                               "piece c as soon as it has arrived, while piece c + 1 is on its way (in step t the "
                               "rank p places after the source sends piece t - p and receives piece t - p + 1).")


# --- 3-5. reduce-scatter, all-gather, all-reduce ------------------------------------------------------------

def _reduction_cases(name: str, g: np.random.Generator, specs: list[tuple[int, int]]) -> list[dict]:
    """(k, N) -> a case: integer-valued tensors on every rank and their sum (for the all-gather,
    rank r holds only chunk r of the sum, the rest -7777)."""
    cases = []
    for k, n in specs:
        per_rank = [_ints(g, n) for _ in range(k)]
        total = torch.stack(per_rank).sum(0)
        at = torch.arange(n)
        inputs = per_rank if name != "all_gather" else [torch.where((at >= a) & (at < b), total, torch.tensor(-7777.0))
                                                        for a, b in ring.chunk_bounds(n, k)]
        cases.append({"k": k, "numel": n, "src": 0, "chunks": None, "inputs": inputs, "total": total})
    return cases


_REDUCTION_LABELS = {"reduce_scatter": "the ring reduce-scatter", "all_gather": "the ring all-gather",
                     "all_reduce": "the ring all-reduce"}
_REDUCTION_SPECS = [(2, 8), (2, 7), (3, 9), (3, 10), (4, 12), (4, 13), (4, 3)]
_REDUCTION_SEEDS = {"reduce_scatter": 11, "all_gather": 12, "all_reduce": 13}


def _visible_reduction(fn: Any, name: str) -> None:
    __tracebackhide__ = True
    g = np.random.default_rng(_REDUCTION_SEEDS[name])
    _compare_reduction(fn, name, _reduction_cases(name, g, _REDUCTION_SPECS), expected(LAB))


def _compare_reduction(fn: Any, name: str, cases: list[dict], ref: Any) -> None:
    """``ref.ring_bytes_sent``: the bytes each rank of the ring collective ``name`` sends."""
    __tracebackhide__ = True
    label = _REDUCTION_LABELS[name]
    runs = _group_by_group(fn, name, _groups(cases), _REDUCTION_FORBID, label)
    for run in runs:
        mine = [c for c in cases if c["k"] == run["k"]]
        for i, case in enumerate(mine):
            model = ref.ring_bytes_sent(name, case["numel"], case["k"], 4)
            for rank in range(run["k"]):
                _judge_reduction(run["ranks"][rank][i], rank, case, run, name, label, model[rank])


def _judge_reduction(rec: dict, rank: int, case: dict, run: dict, name: str, label: str, model: int) -> None:
    __tracebackhide__ = True
    k, n = case["k"], case["numel"]
    where = f"on {_on(run)}, {_case_label(case)}, rank {rank}"
    got, total = rec["out"], case["total"]
    if got.shape != total.shape:
        raise GradingError(f"{where}: the tensor changed shape to {tuple(got.shape)}: work in place")
    a, b = ring.chunk_bounds(n, k)[rank]
    if name == "reduce_scatter":
        if not torch.equal(got[a:b], total[a:b]):
            raise GradingError(f"{where}: chunk {rank} (elements {a}..{b - 1}) should hold the sum over all ranks: "
                               f"{_first_diff(got[a:b], total[a:b])}." + _split_hint(n, k))
    elif not torch.equal(got, total):
        stale = (got == -7777.0).nonzero().flatten().tolist()
        if name == "all_gather" and stale:
            raise GradingError(f"{where}: elements {stale[:6]}{'...' if len(stale) > 6 else ''} were never received."
                               + _split_hint(n, k))
        raise GradingError(f"{where}: {_first_diff(got, total)}." + _split_hint(n, k))
    _check_no_collectives(rec, rank, run, name.replace("_", "-"))
    _check_returned(rec, rank, run, name.replace("_", "-"))
    if rec["sent"] == model:
        return
    sizes = [4 * c for c in _sizes(n, k)]
    why = {"reduce_scatter": f"N minus its own chunk: {4 * n} - {sizes[rank]} bytes (k - 1 steps of one chunk each)",
           "all_gather": f"N minus its right neighbour's chunk, {4 * n} - {sizes[(rank + 1) % k]} bytes: k - 1 steps "
                         "of one chunk, and the chunk that started on the right neighbour never needs forwarding back",
           "all_reduce": f"2 (k - 1) / k N: a reduce-scatter and an all-gather, {model} bytes here"}[name]
    hint = ""
    if name == "all_reduce" and rec["sent"] >= 4 * n:
        hint = (" Your sums are right but each rank sent at least the whole message: a reduce to one rank and a "
                "broadcast back send about 2N per rank whatever k; the ring's reduce-scatter + all-gather sends "
                "2 (k - 1) / k N, the least any all-reduce can.")
    raise GradingError(f"{where}: sent {rec['sent']} bytes; a ring {name.replace('_', '-')} sends {why}.{hint}")


@exercise
def ring_reduce_scatter(fn: Any) -> None:
    """``fn(tensor)``: afterwards chunk r of rank r holds the sum; returns the bytes sent."""
    __tracebackhide__ = True
    _visible_reduction(fn, "reduce_scatter")


@exercise
def ring_all_gather(fn: Any) -> None:
    """``fn(tensor)``: given chunk r valid on rank r, every chunk on every rank; bytes sent."""
    __tracebackhide__ = True
    _visible_reduction(fn, "all_gather")


@exercise
def ring_all_reduce(fn: Any) -> None:
    """``fn(tensor)``: the sum over ranks on every rank, in place; bytes sent."""
    __tracebackhide__ = True
    _visible_reduction(fn, "all_reduce")


# --- 6. gradient buckets ---------------------------------------------------------------------------------

def _ddp_buckets(sizes: Sequence[int], *, cap: int) -> list[list[int]]:
    """DDP's own bucketing (the rule of its C++ Reducer, as DistributedDataParallel calls it with
    the gradients in reverse order), for gradients of ``sizes`` bytes and a cap of ``cap`` bytes."""
    import torch.distributed as dist

    order = list(reversed(range(len(sizes))))
    grads = [torch.empty(int(sizes[i]), dtype=torch.uint8, device="meta") for i in order]
    buckets, _ = dist._compute_bucket_assignment_by_size(grads, [int(cap)], [False] * len(order), order)
    return [[int(i) for i in b] for b in buckets]


@exercise
def plan_buckets(fn: Any) -> None:
    """``fn(param_bytes, cap_bytes)`` -> list of buckets (lists of parameter indices)."""
    __tracebackhide__ = True
    mlp = [4096 * 4, 4096 * 1024 * 4, 1024 * 4, 1024 * 1024 * 4, 1024 * 4, 1024 * 10 * 4, 10 * 4]
    cases = [(mlp, 4 * 2**20, "an MLP's weights and biases (bytes), a 4 MiB cap"),
             ([100, 200, 300, 400], 300, "four tensors, a cap of 300 bytes"),
             ([50, 60, 70], 10**6, "everything fits in one bucket"),
             ([500, 10, 10, 500], 100, "tensors larger than the cap")]
    _compare_plan_buckets(fn, [(sizes, cap, text, _ddp_buckets(sizes, cap=cap)) for sizes, cap, text in cases])


def _compare_plan_buckets(fn: Any, cases: list[tuple[list[int], int, str, list[list[int]]]]) -> None:
    """``cases``: (sizes, cap, text, the expected buckets)."""
    __tracebackhide__ = True
    for sizes, cap, text, want in cases:
        what = f"plan_buckets({sizes if len(sizes) <= 8 else '[...]'}, {cap})" + (f" ({text})" if text else "")
        got = call_student(fn, list(sizes), cap, forbid=[_DDP_BUCKETING], label="gradient bucketing", what=what)
        try:
            got = [[int(i) for i in b] for b in got]
        except (TypeError, ValueError):
            raise GradingError(f"{what} returned {got!r}: return a list of buckets, each a list of indices") from None
        if got == want:
            continue
        flat = [i for b in got for i in b]
        if sorted(flat) != list(range(len(sizes))):
            raise GradingError(f"{what} returned {got}: every parameter index must appear in exactly one bucket")
        if flat and flat[0] == 0 and len(sizes) > 1:
            raise GradingError(f"{what} returned {got}, expected {want}: your first bucket starts with parameter 0. "
                               "Backward produces the gradients of the last layers first, so buckets are filled from "
                               "the last parameter backwards: the first bucket is then ready early and its all-reduce "
                               "overlaps the rest of backward.")
        raise GradingError(f"{what} returned {got}, expected {want}: add parameters (from the last) to the open "
                           "bucket and close it as soon as it holds cap_bytes or more, including the tensor that "
                           "reached the cap (DDP's rule); a last, smaller bucket takes what is left.")


# --- 7. one data-parallel step --------------------------------------------------------------------------

def _param_bytes(cfg: data_parallel.TrainConfig) -> list[int]:
    """The sizes in bytes of the gradients of ``cfg``'s model, in model order."""
    return [p.numel() * p.element_size() for p in data_parallel.make_model(cfg).parameters()]


@exercise
def data_parallel_step(fn: Any) -> None:
    """``fn(model, x, y, lr, buckets)`` on every rank: its shard's MSE gradient, averaged over ranks
    bucket by bucket, then an SGD step; parameters equal one process's step on the whole batch."""
    __tracebackhide__ = True
    configs = [(2, data_parallel.TrainConfig(batch=8, steps=1, seed=1)),
               (3, data_parallel.TrainConfig(batch=12, steps=1, seed=2, lr=0.05))]
    plans = [_ddp_buckets(_param_bytes(cfg), cap=max(1, int(cfg.bucket_mb * 2**20))) for _, cfg in configs]
    _compare_data_parallel_step(fn, configs, plans)


def _compare_data_parallel_step(fn: Any, configs: list[tuple[int, data_parallel.TrainConfig]],
                                plans: list[list[list[int]]]) -> None:
    """``configs``: (k, the model and batch); ``plans``: each config's buckets, given to the ranks.
    The expected parameters: one process on the whole batch (``train_single``)."""
    __tracebackhide__ = True
    groups = [{"k": k, "cases": [{"config": cfg, "buckets": plan}]} for (k, cfg), plan in zip(configs, plans)]
    runs = _group_by_group(fn, "ddp_step", groups, _DP_FORBID, "the data-parallel step")
    for run in runs:
        cfg = dict(configs)[run["k"]]
        start = data_parallel.flat_params(data_parallel.make_model(cfg))
        want = data_parallel.train_single(cfg)[0]
        for rank, (rec,) in enumerate(run["ranks"]):
            where = f"on {_on(run)}, batch {cfg.batch}, lr {cfg.lr:g}, rank {rank}"
            got = rec["params"]
            if rec["allreduce"] != rec["buckets"]:
                raise GradingError(f"{where}: {rec['allreduce']} all-reduce(s) for {rec['buckets']} buckets: one "
                                   "all-reduce per bucket, on one flat buffer of the bucket's gradients (torch.cat of "
                                   "their .reshape(-1)), then copy the pieces back into each .grad.")
            if torch.equal(got, start):
                raise GradingError(f"{where}: the parameters did not change: update them in place "
                                   "(with torch.no_grad(): p -= lr * p.grad).")
            step_got, step_want = got - start, want - start
            k = run["k"]
            for ratio, text in ((k, f"{k} times the right step: after the all-reduce (a sum) divide by k = {k}"),
                                (1 / k, f"1/{k} of the right step: divide by k once (the all-reduce sums; did you "
                                        "also average the loss over the whole batch, or divide twice?)")):
                if torch.allclose(step_got, ratio * step_want, rtol=1e-6, atol=1e-12):
                    raise GradingError(f"{where}: your update is {text}.")
            assert_close(got, want, dtype="fp64", k=cfg.batch, name=f"parameters after the step ({where})")


# --- 8. a question --------------------------------------------------------------------------------------

@exercise
@question
def question_buckets(answer: Any) -> None:
    """Why DDP fills its buckets in reverse order of the parameters."""
    __tracebackhide__ = True
    if len(choice_letters(answer, "ABCD")) != 1:
        raise GradingError(f"answer with one letter among A-D, got {answer!r}")


__all__ = ["cost_models", "ring_broadcast", "ring_reduce_scatter", "ring_all_gather", "ring_all_reduce",
           "plan_buckets", "data_parallel_step", "question_buckets", "run_on_ranks", "TIMEOUT_S"]
