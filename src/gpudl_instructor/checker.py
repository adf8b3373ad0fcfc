"""The checker of ``gpudl grade``: checks run here, outside the student's sandbox.

A test cell's ``check.NAME(student_fn, hidden=True)`` in a graded kernel does not run the check
in the kernel. The kernel connects to the checker's socket (``GPUDL_CHECKER``), names the check
and hands over its arguments: plain values as data, the student's functions as handles. The
checker runs the check in its own process, with the student's seed, which the kernel never
holds; each time the check calls the student's code, the checker sends the plain-data
arguments to the kernel, which runs the call and sends back the plain-data result. At the end
the checker records the verdict where the kernel cannot reach it and tells the kernel the
message to show. ``gpudl grade`` then takes, for every test cell, the stricter of nbgrader's
result and the checker's: rebinding, patching or inspecting anything inside the kernel can
only lose points.

Kernel side (in ``gpudl.grading.boundary``, re-exported here): ``remote_enabled``, ``run_remote``.
Checker side: ``CheckerServer`` (a socket served by threads of the grading process),
``expected_checks`` (which checks each test cell of the instructor's notebook calls) and
``Verdict``. Where students share a device, a check that times work (``gpulease.TIMED_CHECKS``)
runs its measurements (``boundary.timed`` sections) under the device's exclusive lease, taken here.
"""
from __future__ import annotations

import ast
import contextlib
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from gpudl.references import GradingError
from gpudl.grading import boundary, wire

from . import checks as _checks

_checks.install()           # hidden calls run the instructor's checks

STUDENT_RESULT_BYTES = 1 << 30       # the most a student's results may weigh in one message
# The kernel's side lives in gpudl.grading.boundary (which this module builds on).
from gpudl.grading.boundary import CHECKER_ENV, remote_enabled, run_remote  # noqa: E402, F401


# --- checker side ----------------------------------------------------------------------------------

class KernelGone(GradingError):
    """The kernel stopped answering in the middle of a check."""


class RemoteSession(boundary.Session):
    """Calls of student code sent to the kernel over one connection."""

    def __init__(self, conn: socket.socket, device: str | None):
        self.conn = conn
        self.device = device

    def call(self, handle, adapter, args, kwargs, forbid, label):
        tree, buffers = wire.encode((tuple(args), dict(kwargs)), extra=_encode_handle)
        try:
            wire.send(self.conn, {"op": "call", "fn": handle, "adapter": adapter, "call": tree,
                                  "forbid": list(forbid), "label": label}, buffers)
            msg, bufs = wire.recv(self.conn, max_buffer_bytes=STUDENT_RESULT_BYTES)
        except (OSError, EOFError) as exc:
            raise KernelGone(f"the notebook's kernel stopped answering during the check ({exc}): "
                             "interrupted at the cell's time limit?") from None
        op = msg.get("op")
        if op == "result":
            try:
                return boundary.Outcome(value=wire.decode(msg.get("value"), bufs, device=self.device))
            except (wire.WireError, RecursionError, TypeError, ValueError) as exc:
                return boundary.Outcome(refused=f"something that is not plain data ({exc})")
        if op == "raised":
            mro = tuple(str(m) for m in msg.get("mro", ()) if isinstance(m, str))[:20]
            return boundary.Outcome(raised=boundary.Raised(str(msg.get("type", "Exception"))[:100],
                                                           str(msg.get("message", ""))[:4000], mro))
        if op == "refused":
            return boundary.Outcome(refused=str(msg.get("reason", "something that is not plain data"))[:500])
        if op == "interrupted":
            raise KernelGone("the cell was interrupted at its time limit while your code ran")
        raise KernelGone(f"the kernel answered with an unknown message {op!r}")


def _encode_handle(x: Any) -> Any:
    if isinstance(x, boundary.StudentFunction):
        return {"__fn__": x.handle}
    raise wire.WireError(wire._describe(x))


@dataclass
class Record:
    """One check the kernel asked for, and how it ended."""

    cell: str
    check: str
    hidden: bool
    passed: bool
    message: str = ""


@dataclass
class Verdict:
    """The checker's view of one test cell: None when it has no checks to judge."""

    cell: str
    passed: bool | None
    message: str = ""


def out_of_memory(exc: BaseException) -> bool:
    """Whether a check's exception is the grader's process running out of memory (the host's, or a
    GPU's that a class shares): trouble of the grader's, whatever the student's work. Any other
    error of a check stays the cell's failure (a student can misuse a check: ``bound = check.bound``
    raises a TypeError in it)."""
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":      # torch's, CUDA's
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


class CheckerServer:
    """Serves the checks of one student's kernel on a Unix socket at ``path``.

    ``cell`` names the test cell the notebook is executing (set by the grader before each
    cell); every check the kernel asks for is recorded against it. ``seed`` is the student's
    seed for hidden cases; it never leaves this process."""

    def __init__(self, path: Path, seed: str, *, call_timeout: float = 600.0, device: str | None = None,
                 lease: Any = None):
        self.path = Path(path)
        self.lease = lease                   # the device's lease (gpudl_instructor.gpulease) when students share it
        self.leases: list[tuple[str, bool]] = []     # (timed check, whether it had the device alone)
        self.seed = seed
        self.call_timeout = call_timeout
        self.device = device
        self.cell = ""
        self.records: list[Record] = []
        self.errors: list[str] = []          # checks that broke (a bug in a check, or a student misusing one)
        self.out_of_memory: list[str] = []   # checks that ran out of memory themselves: the grader's trouble
        self._lock = threading.Lock()        # one check at a time
        self._sock: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._closed = threading.Event()

    def start(self) -> "CheckerServer":
        if self.path.exists():
            self.path.unlink()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(self.path))
        os.chmod(self.path, 0o777)
        self._sock.listen(8)
        t = threading.Thread(target=self._accept, name="gpudl-checker", daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def close(self) -> None:
        self._closed.set()
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        for t in self._threads[1:]:
            t.join(timeout=5)
        try:
            self.path.unlink()
        except OSError:
            pass

    def __enter__(self) -> "CheckerServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            if len([t for t in self._threads if t.is_alive()]) > 16:
                conn.close()
                continue
            t = threading.Thread(target=self._serve, args=(conn, self.cell), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket, cell: str) -> None:
        from gpudl.grading import seed_override

        with conn:
            conn.settimeout(self.call_timeout)
            name, hidden = "?", False
            try:
                msg, bufs = wire.recv(conn, max_buffer_bytes=STUDENT_RESULT_BYTES)
                if msg.get("op") != "check" or not isinstance(msg.get("check"), str):
                    raise wire.WireError("not a check request")
                name = msg["check"]
                session = RemoteSession(conn, self.device)
                call = wire.decode(msg.get("call"), bufs, device=self.device,
                                   extra=lambda key, node: _decode_handle(key, node, session))
                args, kwargs = tuple(call["args"]), dict(call["kwargs"])
                hidden = bool(kwargs.pop("hidden", False))
                check, extra = boundary.resolve(name, hidden)
                kwargs.update(extra)
            except GradingError as exc:        # a hidden call of a check that has no hidden cases
                self._record(cell, name, hidden, False, str(exc))
                self._done(conn, False, str(exc))
                return
            except (wire.WireError, KeyError, TypeError, ValueError, ImportError, OSError, EOFError) as exc:
                self._record(cell, name, hidden, False, f"the grader could not read this check ({exc})")
                self._done(conn, False, "the grader could not read this check")
                return
            token = seed_override.set(self.seed)
            try:
                with self._lock, self._timed(name):
                    check(*args, **kwargs)
            except KernelGone as exc:
                self._record(cell, name, hidden, False, str(exc))
                return
            except GradingError as exc:
                self._record(cell, name, hidden, False, str(exc))
                self._done(conn, False, str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - a broken check fails the cell, and the instructor hears of it
                text = f"{type(exc).__name__}: {exc}"
                self.errors.append(f"{name}: {text}")
                if out_of_memory(exc):
                    self.out_of_memory.append(f"{name}: {text}")
                self._record(cell, name, hidden, False, f"the check itself failed ({text})")
                self._done(conn, False, f"the grader's check failed ({text}); tell your instructor")
                return
            finally:
                seed_override.reset(token)
            self._record(cell, name, hidden, True)
            self._done(conn, True, "")

    @contextlib.contextmanager
    def _timed(self, name: str):
        """A check that times work on the student's behalf holds the shared device alone while it
        measures: each of its ``boundary.timed(what)`` sections of the kind the students share
        ("host" where they share the CPU, "gpu" where they share a GPU) takes the exclusive lease,
        here in the checker, where the student's code cannot reach it; the rest of the check
        shares (on a GPU, timing host work against the package's timer needs no GPU alone)."""
        from gpudl.grading import boundary

        from .gpulease import is_timed

        if self.lease is None or not is_timed(name):
            yield
            return
        shared_kind = "host" if self.lease.path.stem == "cpu" else "gpu"

        @contextlib.contextmanager
        def section(what: str):
            if what != shared_kind:
                yield
                return
            with self.lease.exclusive() as granted:
                self.leases.append((name, granted))
                yield

        boundary.TIMED_SECTION = section
        try:
            yield
        finally:
            boundary.TIMED_SECTION = None

    def _record(self, cell: str, name: str, hidden: bool, passed: bool, message: str = "") -> None:
        self.records.append(Record(cell, name, hidden, passed, message))

    @staticmethod
    def _done(conn: socket.socket, passed: bool, message: str) -> None:
        try:
            wire.send(conn, {"op": "done", "passed": passed, "message": message})
        except OSError:
            pass

    def verdicts(self, expected: dict[str, set[tuple[str, bool]]]) -> dict[str, Verdict]:
        """For each test cell: passed when every check its instructor's source calls ran while
        it executed and passed, and nothing that ran then failed."""
        out = {}
        for cell, wanted in expected.items():
            if not wanted:
                out[cell] = Verdict(cell, None)
                continue
            mine = [r for r in self.records if r.cell == cell]
            failed = [r for r in mine if not r.passed]
            if failed:
                out[cell] = Verdict(cell, False, failed[0].message)
                continue
            done = {(r.check, r.hidden) for r in mine}
            missing = sorted(wanted - done)
            if missing:
                what = ", ".join(f"{n.split(':')[-1]}{' (hidden cases)' if h else ''}" for n, h in missing)
                out[cell] = Verdict(cell, False, f"the grader's checker never saw {what} run in this cell")
            else:
                out[cell] = Verdict(cell, True)
        return out


def _decode_handle(key: str, node: dict, session: RemoteSession) -> Any:
    if key == "__fn__" and type(node[key]) is int:
        name = node.get("name", "your function")
        return boundary.StudentFunction(node[key], str(name)[:80] if isinstance(name, str) else "your function",
                                        session)
    raise wire.WireError(f"an unknown tag {key!r}")


# --- what each test cell must run ---------------------------------------------------------------------

def _aliases(cells: Iterable[str]) -> dict[str, str]:
    """Names bound to grading modules by imports in any cell: {"check": "gpudl.grading.lab01"}."""
    out: dict[str, str] = {}
    for source in cells:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpudl.grading"):
                for a in node.names:
                    full = f"{node.module}.{a.name}" if node.module == "gpudl.grading" else node.module
                    out[a.asname or a.name] = full
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("gpudl.grading.") and a.asname:
                        out[a.asname] = a.name
    return out


def expected_checks(nb: Any) -> dict[str, set[tuple[str, bool]]]:
    """{test cell id: {(check name, hidden)}} from the instructor's notebook: each call
    ``alias.NAME(..., hidden=True|False)`` of a grading module in a graded cell."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    aliases = _aliases(c.source for c in cells)
    out: dict[str, set[tuple[str, bool]]] = {}
    for cell in cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if not nbg.get("grade") or nbg.get("solution"):
            continue
        wanted: set[tuple[str, bool]] = set()
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            tree = ast.Module(body=[], type_ignores=[])
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in aliases):
                hidden = any(k.arg == "hidden" and isinstance(k.value, ast.Constant) and bool(k.value.value)
                             for k in node.keywords)
                wanted.add((f"{aliases[node.func.value.id]}:{node.func.attr}", hidden))
        out[nbg["grade_id"]] = wanted
    return out


__all__ = ["CHECKER_ENV", "remote_enabled", "run_remote", "CheckerServer", "Verdict", "Record",
           "expected_checks", "KernelGone"]
