"""What runs in a worker process of ``gpudl.collectives.launch``, and the zygote that forks them.

This module imports only the standard library at the top: the zygote runs it as a script
(``runpy.run_path``), so that starting one imports nothing else, then imports torch once and
forks a worker per rank for each launch. A worker sets the caller's environment, working
directory and ``sys.path``, sends its stdout and stderr to files, joins the process group
(rank 0 opens a ``TCPStore`` on 127.0.0.1 on a port the kernel picks and tells the others
through a file), runs the function and writes its result, or its exception, to a file.

Names, for ``launch``: ``pickler``, ``worker_body``, ``zygote_main``, ``send_msg``,
``recv_msg``, ``die_with_parent``; helpers ``to_cpu``, ``write_atomic``, ``redirect_stdio``.
"""
from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import pickle
import select
import signal
import socket
import struct
import sys
import time
import traceback
from typing import Any


def pickler():
    """cloudpickle (functions by value, so a notebook's work), else a vendored copy, else pickle."""
    for name in ("cloudpickle", "joblib.externals.cloudpickle", "numba.cloudpickle"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "dumps"):
            return module
    return pickle


def to_cpu(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(to_cpu(v) for v in value)
    if type(value) is dict:
        return {k: to_cpu(v) for k, v in value.items()}
    return value


def write_atomic(path: str, data: bytes) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def worker_body(rank: int, job: dict[str, Any]) -> int:
    """Join the group, run the job's function, write its result; the process's exit code."""
    from datetime import timedelta

    jobdir, world = job["dir"], job["world"]
    result: tuple = ("error", "RuntimeError", "the worker did not start", "")
    try:
        import torch
        import torch.distributed as dist

        if job["threads"]:
            torch.set_num_threads(job["threads"])
        fn, args, kwargs = pickle.loads(job["payload"])      # cloudpickle writes plain pickles
        pg_timeout = timedelta(seconds=job["timeout"] + job["start_timeout"] + 30)
        port_file = os.path.join(jobdir, "port")
        if rank == 0:
            store = dist.TCPStore("127.0.0.1", 0, world, is_master=True, timeout=pg_timeout, wait_for_workers=False)
            write_atomic(port_file, str(store.port).encode())
        else:
            while not os.path.exists(port_file):
                time.sleep(0.005)
            with open(port_file) as f:
                port = int(f.read())
            store = dist.TCPStore("127.0.0.1", port, world, is_master=False, timeout=pg_timeout)
        init: dict[str, Any] = {"backend": job["backend"], "store": store, "rank": rank, "world_size": world,
                                "timeout": pg_timeout}
        if job["backend"] == "nccl":
            torch.cuda.set_device(rank % torch.cuda.device_count())
            init["device_id"] = torch.device("cuda", torch.cuda.current_device())
        dist.init_process_group(**init)
        dist.barrier()          # every pair connected before any rank can finish and close its end
        write_atomic(os.path.join(jobdir, f"{rank}.ready"), b"")
        value = fn(rank, world, *args, **kwargs)
        result = ("ok", to_cpu(value))
        dist.barrier()          # and no rank leaves while another still talks to it
    except BaseException as exc:  # noqa: BLE001 - reported to the caller by rank
        result = ("error", type(exc).__name__, str(exc), traceback.format_exc())
    try:
        data = pickler().dumps(result)
    except Exception as exc:  # noqa: BLE001
        result = ("error", type(exc).__name__, f"the result of rank {rank} cannot be pickled: {exc}", "")
        data = pickle.dumps(result)
    write_atomic(os.path.join(jobdir, f"{rank}.result"), data)
    with contextlib.suppress(Exception):
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0 if result[0] == "ok" else 1


def die_with_parent() -> None:
    """On Linux, SIGKILL this process when its parent exits."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)     # PR_SET_PDEATHSIG


def redirect_stdio(jobdir: str, rank: int) -> None:
    for fd, name, mode in ((0, os.devnull, os.O_RDONLY), (1, f"{rank}.out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                           (2, f"{rank}.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        target = os.open(name if name == os.devnull else os.path.join(jobdir, name), mode, 0o600)
        os.dup2(target, fd)
        os.close(target)


# --- the zygote: imports torch once, forks workers -------------------------------------------------

def send_msg(sock: socket.socket, obj: Any) -> None:
    data = pickle.dumps(obj)
    sock.sendall(struct.pack("<Q", len(data)) + data)


def recv_msg(sock: socket.socket) -> Any:
    head = b""
    while len(head) < 8:
        chunk = sock.recv(8 - len(head))
        if not chunk:
            raise EOFError
        head += chunk
    (n,) = struct.unpack("<Q", head)
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError
        buf += chunk
    return pickle.loads(bytes(buf))


def zygote_main(fd: int) -> None:
    """The zygote's loop: fork workers for each job, report their exits, kill on request."""
    sock = socket.socket(fileno=fd)
    die_with_parent()
    for name in ("torch", "torch.distributed", "torch.nn", "gpudl.collectives"):
        with contextlib.suppress(Exception):
            importlib.import_module(name)

    def cuda_initialised() -> bool:
        torch = sys.modules.get("torch")
        return bool(torch is not None and torch.cuda.is_initialized())

    children: dict[int, tuple[int, int]] = {}          # pid -> (job, rank)
    jobs: dict[int, list[int]] = {}
    while True:
        readable, _, _ = select.select([sock], [], [], 0.02)
        if readable:
            try:
                msg = recv_msg(sock)
            except (EOFError, OSError):
                for pid in children:
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
                os._exit(0)
            if msg["op"] == "launch":
                sys.path[:] = msg["path"]
                culprit = None
                for name in msg["modules"]:
                    with contextlib.suppress(Exception):
                        importlib.import_module(name)
                    if culprit is None and cuda_initialised():
                        culprit = name
                if cuda_initialised():
                    send_msg(sock, {"op": "started", "job": msg["id"], "pids": [], "cuda": culprit or "?",
                                     "error": f"importing {culprit} initialised CUDA in the zygote"})
                    continue
                pids = []
                for rank in range(msg["world"]):
                    pid = os.fork()
                    if pid == 0:
                        code = 1
                        try:
                            os.setpgid(0, 0)
                            die_with_parent()
                            sock.close()
                            redirect_stdio(msg["dir"], rank)
                            os.environ.clear()
                            os.environ.update(msg["env"])
                            os.chdir(msg["cwd"])
                            code = worker_body(rank, msg)
                        finally:
                            with contextlib.suppress(Exception):
                                sys.stdout.flush()
                                sys.stderr.flush()
                            os._exit(code)
                    children[pid] = (msg["id"], rank)
                    pids.append(pid)
                jobs[msg["id"]] = pids
                send_msg(sock, {"op": "started", "job": msg["id"], "pids": pids})
            elif msg["op"] == "kill":
                for pid in jobs.get(msg["job"], []):
                    if pid in children:
                        for kill in (os.killpg, os.kill):
                            with contextlib.suppress(OSError):
                                kill(pid, signal.SIGKILL)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in children:
                job, rank = children.pop(pid)
                send_msg(sock, {"op": "exit", "job": job, "rank": rank, "code": os.waitstatus_to_exitcode(status)})
