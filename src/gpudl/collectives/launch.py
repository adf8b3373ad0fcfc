"""Start k worker processes for a function, from a notebook, a test or the grader.

``launch(fn, k, *args)`` runs ``fn(rank, k, *args)`` in k fresh processes that form one
``torch.distributed`` process group (gloo on a CPU; NCCL with one GPU per worker where there
are k GPUs), and returns the k results in rank order. What it guarantees:

- **A hung rank never hangs the caller.** Every launch has a time limit that starts once
  every rank has joined the group (``timeout``; joining has its own, ``start_timeout``). At
  the limit the workers are killed and ``WorkerTimeout`` says which ranks had not finished
  and what that usually means (a send without a matching receive).
- **A failing rank is named.** ``WorkerError`` carries the first rank that raised, its
  exception and traceback, and stops the others (which are usually waiting for it).
- **Functions from a notebook cell run.** The function and its arguments travel pickled by
  value (cloudpickle), so ``fn`` may be defined in ``__main__``.
- **The environment reaches every worker unchanged**: each worker's ``os.environ`` is the
  caller's at the time of the call (so ``NCCL_NVLS_ENABLE=0`` and its kin set by the caller
  hold in every worker). The rendezvous goes through arguments, not variables: rank 0 opens a
  ``TCPStore`` on 127.0.0.1 on a port the kernel picks, and tells the others through a file.
- **Nothing outlives the caller.** Workers die with the process that started them.

How workers start. Importing torch takes seconds, and a laptop, CI or the grader launches
many small jobs, so on Linux a *zygote* does it once: a fresh interpreter (started with the
caller's environment, so forking it is safe: it holds no GPU context and no threads of a
Jupyter kernel) imports torch and then forks one worker per rank for each launch. Forking the
caller itself would copy a multithreaded Jupyter kernel (unsafe, and Python 3.12 warns on
stderr) and, on a GPU machine, a CUDA context that a child cannot use. Each worker sets its
environment to the caller's before anything else; a new zygote is started when a variable
that libraries may read at import (``TORCH*``, ``CUDA*``, ``NCCL*``, ``OMP*``, ``PYTHON*``,
...) has changed since the last one was started. (The workers' side, and the zygote, are
``gpudl.collectives.worker``.) The zygote never initialises CUDA (torch's CUDA checks go to
NVML there); were a preloaded module to do it, that module is left to the workers and a fresh
zygote takes over. ``start="spawn"`` (the default elsewhere) starts each
worker as a fresh interpreter instead. Workers' stdout and stderr go to files; stdout is
printed (with a ``[rank r]`` prefix) when the launch ends, stderr only in error messages, so
library warnings never reach a notebook's stderr.

Public names: ``launch``, ``default_backend``, ``worker_device``, ``LaunchError``,
``WorkerError``, ``WorkerTimeout``, ``shutdown``.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from . import worker as _w
from ..references import labels as guard_labels
from ..references import refuse_under_a_guard

_DEADLOCK_HINT = ("a deadlock? Every send needs a matching receive on its peer: in a ring, rank r sends to "
                  "(r + 1) % k and receives from (r - 1) % k, and a blocking send posted before the receive on "
                  "every rank waits forever (post both at once: batch_isend_irecv, or isend/irecv then wait). "
                  "Also check that every rank runs the same number of steps.")


class LaunchError(RuntimeError):
    """A launch that did not give k results; ``outputs[r]`` is rank r's (stdout, stderr)."""

    def __init__(self, message: str, outputs: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.outputs = outputs or []


class WorkerError(LaunchError):
    """Rank ``rank`` raised ``exc_type`` (or died: ``exc_type`` is empty, ``exitcode`` says how)."""

    def __init__(self, message: str, *, rank: int, exc_type: str, exc_message: str, exitcode: int | None,
                 traceback_text: str = "", outputs: list[tuple[str, str]] | None = None):
        super().__init__(message, outputs)
        self.rank, self.exc_type, self.exc_message = rank, exc_type, exc_message
        self.exitcode, self.traceback_text = exitcode, traceback_text


class WorkerTimeout(LaunchError):
    """Ranks ``ranks`` had not finished (or not joined the group) at the time limit."""

    def __init__(self, message: str, *, ranks: list[int], seconds: float, joined: bool,
                 outputs: list[tuple[str, str]] | None = None):
        super().__init__(message, outputs)
        self.ranks, self.seconds, self.joined = ranks, seconds, joined


def default_backend(world_size: int) -> str:
    """"nccl" when torch sees at least ``world_size`` GPUs (one per worker), else "gloo"."""
    import torch

    ok = torch.cuda.is_available() and torch.cuda.device_count() >= world_size
    return "nccl" if ok and torch.distributed.is_nccl_available() else "gloo"


def worker_device():
    """The device of this worker: its GPU under NCCL, else the CPU."""
    import torch
    import torch.distributed as dist

    if dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


# The zygote runs worker.py as a script, so that starting it imports nothing but the standard
# library; then torch. It must never initialise CUDA (a forked child could not use it): torch's
# CUDA checks ask NVML instead of the driver there, and its BLAS keeps no thread pool. Its
# workers get the caller's environment back before anything else.
_ZYGOTE_BOOT = ("import os, sys, json, runpy; os.environ['PYTORCH_NVML_BASED_CUDA_CHECK'] = '1'; "
                "os.environ['OPENBLAS_NUM_THREADS'] = '1'; sys.path[:] = json.loads(sys.argv[2]); "
                "runpy.run_path(sys.argv[3], run_name='gpudl_zygote')['zygote_main'](int(sys.argv[1]))")


class _Zygote:
    def __init__(self, env: dict[str, str]):
        import json

        self.env = env
        # started for a check (lab 10's, while its guard is open), it may serve the next check too
        self.under_a_guard = bool(guard_labels)
        ours, theirs = socket.socketpair()
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-c", _ZYGOTE_BOOT, str(theirs.fileno()), json.dumps(sys.path),
                                      os.path.abspath(_w.__file__)],
                                     pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log, close_fds=True)
        theirs.close()
        self.sock = ours

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, msg: dict[str, Any]) -> None:
        _w.send_msg(self.sock, msg)

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        readable, _, _ = select.select([self.sock], [], [], max(timeout, 0.0))
        if not readable:
            return None
        try:
            return _w.recv_msg(self.sock)
        except (EOFError, OSError):
            self.log.seek(0)
            tail = self.log.read().decode(errors="replace")[-2000:]
            raise LaunchError(f"the worker launcher (zygote) died: {tail or 'no output'}") from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


_zygote: _Zygote | None = None
_NO_PRELOAD: set[str] = set()          # modules whose import initialises CUDA: workers import them


class _CudaInZygote(Exception):
    def __init__(self, module: str):
        super().__init__(module)
        self.module = module


def shutdown() -> None:
    """Stop the zygote (a later launch starts a new one)."""
    global _zygote
    if _zygote is not None:
        _zygote.close()
        _zygote = None


atexit.register(shutdown)


# Variables a library may read when the zygote imports it (rather than when a worker uses it):
# a change to one of them starts a new zygote. Workers get the whole environment anyway.
_IMPORT_TIME = ("PYTHON", "LD_", "TORCH", "PYTORCH", "CUDA", "NCCL", "NVSHMEM", "GLOO", "OMP", "MKL", "KMP",
                "OPENBLAS", "TRITON")


def _import_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_IMPORT_TIME)}


def _zygote_for(env: dict[str, str]) -> _Zygote:
    global _zygote
    if _zygote is None or not _zygote.alive() or _import_env(_zygote.env) != _import_env(env):
        shutdown()
        _zygote = _Zygote(env)
    return _zygote


# --- the caller's side ----------------------------------------------------------------------------

_SPAWN_BOOT = ("import sys, pickle; job = pickle.load(open(sys.argv[1], 'rb')); sys.path[:] = job['path']; "
               "from gpudl.collectives.worker import die_with_parent, worker_body; die_with_parent(); "
               "sys.exit(worker_body(int(sys.argv[2]), job))")


class _Job:
    """One launch's workers, started by the zygote or as fresh interpreters."""

    def __init__(self, job: dict[str, Any], start: str):
        self.job, self.start, self.world = job, start, job["world"]
        self.codes: dict[int, int] = {}
        self.order: list[int] = []                 # ranks in the order they exited
        self.pids: list[int] = []
        self.procs: list[subprocess.Popen] = []
        if start == "fork":
            self.zygote = _zygote_for(job["env"])
            self.zygote.request({"op": "launch", **job})
            while True:
                msg = self.zygote.next_message(60.0)
                if msg is None:
                    raise LaunchError("the worker launcher (zygote) did not answer within 60 s")
                if msg["op"] == "started" and msg["job"] == job["id"]:
                    if msg.get("cuda"):
                        raise _CudaInZygote(msg["cuda"])
                    if msg.get("error"):
                        raise LaunchError(msg["error"])
                    self.pids = msg["pids"]
                    break
                # anything else is a late exit from an earlier, killed job
        else:
            path = os.path.join(job["dir"], "job.pkl")
            with open(path, "wb") as f:
                pickle.dump(job, f)
            for rank in range(self.world):
                out = open(os.path.join(job["dir"], f"{rank}.out"), "wb")
                err = open(os.path.join(job["dir"], f"{rank}.err"), "wb")
                with out, err:
                    self.procs.append(subprocess.Popen([sys.executable, "-c", _SPAWN_BOOT, path, str(rank)],
                                                       env=job["env"], cwd=job["cwd"], stdin=subprocess.DEVNULL,
                                                       stdout=out, stderr=err, start_new_session=True))
            self.pids = [p.pid for p in self.procs]

    def poll(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for exits; record them in ``codes``."""
        if self.start == "fork":
            end = time.monotonic() + timeout
            while True:
                msg = self.zygote.next_message(max(0.0, end - time.monotonic()))
                if msg is None:
                    return
                if msg["op"] == "exit" and msg["job"] == self.job["id"]:
                    self.codes[msg["rank"]] = msg["code"]
                    self.order.append(msg["rank"])
                    timeout = 0.0
                    end = time.monotonic()
        else:
            time.sleep(timeout)
            for rank, p in enumerate(self.procs):
                if rank not in self.codes and p.poll() is not None:
                    self.codes[rank] = p.returncode
                    self.order.append(rank)

    def kill(self) -> None:
        if len(self.codes) == self.world:
            return
        for rank, pid in enumerate(self.pids):
            if rank not in self.codes:
                for kill in (os.killpg, os.kill):
                    with contextlib.suppress(OSError):
                        kill(pid, signal.SIGKILL)
        if self.start == "fork":
            with contextlib.suppress(Exception):
                self.zygote.request({"op": "kill", "job": self.job["id"]})
            end = time.monotonic() + 10
            while len(self.codes) < self.world and time.monotonic() < end:
                self.poll(0.1)
        else:
            for rank, p in enumerate(self.procs):
                with contextlib.suppress(Exception):
                    self.codes.setdefault(rank, p.wait(timeout=10))


def _read(path: str, limit: int = 1 << 20) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode(errors="replace")
    except OSError:
        return ""


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _ranks(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))


def _modules_of(fn: Callable) -> list[str]:
    name = getattr(fn, "__module__", None) or ""
    return [name] if name and name != "__main__" and name in sys.modules else []


MAX_WORKERS = 64        # processes of one launch: a notebook's ring, a host's GPUs (never a typo's thousands)


def launch(fn: Callable, world_size: int, *args: Any, backend: str | None = None, timeout: float = 60.0,
           start_timeout: float = 120.0, threads: int | None = 1, start: str | None = None, echo: bool = True,
           preload: tuple[str, ...] = (), **kwargs: Any) -> list[Any]:
    """Run ``fn(rank, world_size, *args, **kwargs)`` in ``world_size`` worker processes that form
    one process group; return their results in rank order (tensors on the CPU).

    ``backend``: "gloo" or "nccl" (default: ``default_backend``); under NCCL worker r uses GPU r.
    ``timeout``: seconds from the moment every rank has joined the group until all have
    returned; ``start_timeout``: seconds to join. ``threads``: torch's intra-op threads per
    worker (1, as torchrun sets; None leaves torch's default). ``start``: "fork" (from a
    zygote; Linux) or "spawn" (a fresh interpreter per worker). ``echo``: print the workers'
    stdout. ``preload``: modules the zygote imports once before forking, for all later
    launches too (DDP's first use imports ``torch._dynamo``: seconds in every worker).
    Raises ``WorkerError`` (a rank raised or died) or ``WorkerTimeout``; at most ``MAX_WORKERS``.
    """
    refuse_under_a_guard("gpudl.collectives.launch", sys._getframe(1))     # it runs code in another process
    if not callable(fn):
        raise TypeError(f"launch(fn, world_size, ...) runs a function in every worker, got {type(fn).__name__} "
                        f"{fn!r:.60}")
    if not isinstance(world_size, int) or isinstance(world_size, bool) or not 1 <= world_size <= MAX_WORKERS:
        raise ValueError(f"world_size must be an int from 1 to {MAX_WORKERS}, got {world_size!r:.60}")
    if timeout <= 0 or start_timeout <= 0:
        raise ValueError(f"timeouts must be positive, got timeout={timeout}, start_timeout={start_timeout}")
    backend = backend or default_backend(world_size)
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
    if backend == "nccl":
        import torch
        if torch.cuda.device_count() < world_size:
            raise ValueError(f"NCCL needs one GPU per worker: {world_size} workers, "
                             f"{torch.cuda.device_count()} GPU(s) visible")
    start = start or ("fork" if sys.platform.startswith("linux") else "spawn")
    if start not in ("fork", "spawn"):
        raise ValueError(f"start must be 'fork' or 'spawn', got {start!r}")
    try:
        payload = _w.pickler().dumps((fn, args, kwargs))
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"cannot send {getattr(fn, '__name__', fn)!r} and its arguments to the workers: {exc}"
                        + (" (functions defined in a notebook need cloudpickle: pip install cloudpickle)"
                           if _w.pickler() is pickle else "")) from None
    jobdir = tempfile.mkdtemp(prefix="gpudl-launch-")
    job = {"id": int.from_bytes(os.urandom(6), "little"), "dir": jobdir, "world": world_size, "payload": payload,
           "backend": backend, "timeout": float(timeout), "start_timeout": float(start_timeout), "threads": threads,
           "env": dict(os.environ), "cwd": os.getcwd(), "path": list(sys.path),
           "modules": _modules_of(fn) + list(preload)}
    workers = None
    try:
        job["modules"] = [m for m in job["modules"] if m not in _NO_PRELOAD]
        try:
            workers = _Job(job, start)
        except _CudaInZygote as exc:
            # A forked child cannot use CUDA once its parent initialised it: this zygote is spoilt.
            # Start a fresh one that leaves the module to the workers to import.
            _NO_PRELOAD.add(exc.module)
            shutdown()
            job["modules"] = [m for m in job["modules"] if m not in _NO_PRELOAD]
            workers = _Job(job, start)
        return _supervise(workers, jobdir, world_size, timeout, start_timeout, echo)
    finally:
        if workers is not None:
            workers.kill()
        shutil.rmtree(jobdir, ignore_errors=True)


def _supervise(workers: _Job, jobdir: str, k: int, timeout: float, start_timeout: float, echo: bool) -> list[Any]:
    began = time.monotonic()
    deadline, joined = began + start_timeout, False
    failed_at: float | None = None
    while True:
        workers.poll(0.02)
        now = time.monotonic()
        if not joined and all(os.path.exists(os.path.join(jobdir, f"{r}.ready")) for r in range(k)):
            joined, deadline = True, now + timeout
        bad = [r for r, c in workers.codes.items() if c != 0]
        if bad and failed_at is None:
            failed_at = now
        # A failing rank leaves the others waiting for it: give them a moment, then stop them.
        if len(workers.codes) == k or (failed_at is not None and now - failed_at > 2.0) or now > deadline:
            break
    timed_out = len(workers.codes) < k and failed_at is None
    died = [r for r in workers.order if workers.codes[r] != 0]     # before we stopped anyone
    workers.kill()
    outputs = [(_read(os.path.join(jobdir, f"{r}.out")), _read(os.path.join(jobdir, f"{r}.err"))) for r in range(k)]
    results: dict[int, tuple] = {}
    results_at: dict[int, int] = {}
    for r in range(k):
        path = os.path.join(jobdir, f"{r}.result")
        if os.path.exists(path):
            with open(path, "rb") as f:
                try:
                    results_at[r] = os.stat(path).st_mtime_ns
                    results[r] = pickle.loads(f.read())
                except Exception as exc:  # noqa: BLE001
                    results[r] = ("error", type(exc).__name__, f"its result could not be read: {exc}", "")
    if echo:
        for r, (out, _) in enumerate(outputs):
            for line in out.splitlines():
                print(f"[rank {r}] {line}")
    if timed_out:
        waiting = [r for r in range(k) if r not in results]
        if not joined:
            late = [r for r in range(k) if not os.path.exists(os.path.join(jobdir, f"{r}.ready"))]
            raise WorkerTimeout(f"{_ranks(late)} of {k} did not join the process group within {start_timeout:g} s; "
                                f"the workers were stopped.{_stderr_note(outputs, late)}",
                                ranks=late, seconds=start_timeout, joined=False, outputs=outputs)
        done = [r for r in range(k) if r not in waiting]
        raise WorkerTimeout(f"{_ranks(waiting)} of {k} did not finish within {timeout:g} s"
                            + (f" ({_ranks(done)} finished)" if done else "") + f": {_DEADLOCK_HINT} "
                            "The workers were stopped.", ranks=waiting, seconds=timeout, joined=True, outputs=outputs)
    # The cause: a rank that died without a result (its peers then fail on the closed
    # connection), else the rank whose error came first; the others usually failed waiting.
    errors = [r for r in range(k) if results.get(r, ("error",))[0] != "ok"]
    if errors:
        crashed = [r for r in died if r not in results]
        first = crashed[0] if crashed else min(errors, key=lambda r: (r not in results, results_at.get(r, 0), r))
        raise _worker_error(first, errors, results, workers.codes, outputs, k)
    return [results[r][1] for r in range(k)]


def _stderr_note(outputs: list[tuple[str, str]], ranks: list[int]) -> str:
    for r in ranks:
        if outputs[r][1].strip():
            return f"\nrank {r}'s stderr ends:\n{_tail(outputs[r][1])}"
    return ""


def _worker_error(first: int, errors: list[int], results: dict[int, tuple], codes: dict[int, int],
                  outputs: list[tuple[str, str]], k: int) -> WorkerError:
    others = [r for r in errors if r != first]
    tail = (f" (then {_ranks(others)} failed or {'was' if len(others) == 1 else 'were'} stopped)" if others
            else "")
    if first in results:
        _, etype, emsg, tb = results[first]
        return WorkerError(f"rank {first} of {k} raised {etype}: {emsg}{tail}\n{_tail(tb, 15)}", rank=first,
                           exc_type=etype, exc_message=emsg, exitcode=codes.get(first), traceback_text=tb,
                           outputs=outputs)
    code = codes.get(first)
    how = (f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
           else f"exited with status {code}")
    hint = " (out of memory?)" if code == -signal.SIGKILL else ""
    return WorkerError(f"rank {first} of {k} {how}{hint} without a result{tail}{_stderr_note(outputs, [first])}",
                       rank=first, exc_type="", exc_message="", exitcode=code, outputs=outputs)


__all__ = ["launch", "default_backend", "worker_device", "LaunchError", "WorkerError", "WorkerTimeout", "shutdown"]
