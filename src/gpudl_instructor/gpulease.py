"""Students sharing a GPU while they are graded, and the lease that keeps timing honest.

``gpudl grade`` runs several students on one GPU (``--per-gpu N``): most checks compare values,
and a neighbour's kernels cannot change a value. A check that *times* GPU work on the student's
behalf (lab 02's timers and FLOP/s, lab 07's kernel speed beside SDPA: ``TIMED_CHECKS``) must not
share the device while it measures. The design:

- **One reader/writer lock per GPU**, a file ``<lease dir>/<gpu>.lock`` locked with ``flock``
  (``GpuLease``). The lock is taken by the *grader's* process of each student (the one that
  drives nbgrader and runs the checker), never by the student's kernel: the kernel runs in the
  sandbox, which does not see the file, so student code can neither skip nor hold the lease.
- **Every cell runs under a shared lock.** The grader takes it before it sends a cell to the
  kernel and drops it when the cell has finished (``GradedExecute.preprocess_cell``): students
  share the GPU freely, cell by cell.
- **A timed check measures under the exclusive lock.** The checker takes it around each of the
  check's measurements (``gpudl.grading.boundary.timed`` sections) of the kind the students
  share: "gpu" sections on a GPU (a simulated device's probes time the host, and share), "host"
  sections on a CPU machine. The rest of the check shares. For each section the checker
  (``CheckerServer``) first drops its own student's shared lock (the cell that runs the check
  is that student's, and it waits on the check), then waits until every other student's running
  cell has finished; meanwhile those students wait at their next cell boundary. No cell is ever
  interrupted or slowed by a lease: a student waits only *between* cells, where no clock of theirs
  runs (the per-cell limit starts when the cell is sent; the per-student limit is extended by the
  time spent waiting, ``waited``). When the check ends, the lock goes back to shared.
- **A turnstile keeps timing from starving.** ``flock`` gives a waiting writer no priority over
  new readers, so a second file, ``<gpu>.turnstile``, is locked exclusively by a writer for as long
  as it waits and measures, and passed through (taken and dropped) by each reader before it takes
  its shared lock: once a timed check waits, no new cell starts on that GPU. A writer holds no
  shared lock while it waits for the turnstile, so two timed checks cannot wait on each other.
- **Bounded waits.** A cell runs at most its time limit, so a writer's wait is bounded; still,
  every wait here has a limit (``timeout``), after which the grader goes on without the lease and
  says so (``granted`` is False): a timed check judges the student's timer against the package's
  timer measured in the same run (interleaved, median of rounds, a band), so a disturbed
  measurement is repeated, not failed; the lease makes disturbance rare, it is not what keeps a
  correct timer inside the band.

What the lease cannot see: GPU work a cell queued and did not wait for may run on for the
milliseconds the device needs to drain its queue after the cell returns, and a thread a student
leaves running between cells keeps launching work. Both only *disturb* a neighbour's measurement
(which the interleaved judging absorbs and repeats); neither changes a value.

On a CPU-only machine the same lease runs with one lock for the machine (``cpu``) whenever more
than one student is graded at a time. ``--per-gpu 1`` (one student per GPU) takes no lease.

Each student's GPU memory is bounded too: ``memory_fraction_line`` is the line the grader has the
kernel run before any cell (``torch.cuda.set_per_process_memory_fraction``, applied when CUDA
starts); a submission that goes past it gets torch's out-of-memory error in its own cell, which the
grader annotates with the bound (``OOM_NOTE``), and its neighbours never notice.

Public names: ``TIMED_CHECKS``, ``is_timed``, ``GpuLease``, ``lease_path``, ``memory_fraction_line``,
``OOM_NOTE``, ``LeaseError``.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

# The checks that time work on the student's behalf, by the course check's name. A check that
# times nothing is not listed: it shares the device.
TIMED_CHECKS = frozenset({
    "gpudl.grading.lab02:cpu_timer",
    "gpudl.grading.lab02:gpu_timer",
    "gpudl.grading.lab02:matmul_tflops",
    "gpudl.grading.lab07:kernel_speed",
})

LEASE_DIR_ENV = "GPUDL_LEASE_DIR"
OOM_NOTE = ("[the grader] students share this GPU while they are graded: each student's kernel may allocate "
            "{bound}. Your notebook went past that bound; use smaller tensors or free them "
            "(del x; torch.cuda.empty_cache()).")


class LeaseError(RuntimeError):
    """A lock file that cannot be used (a bad path, a file system without locks)."""


def is_timed(check: str) -> bool:
    """Whether check ``check`` ("gpudl.grading.lab02:gpu_timer") times work on the student's behalf."""
    return check in TIMED_CHECKS


def lease_path(gpu: str, directory: str | Path | None = None) -> Path:
    """The lock file of device ``gpu`` (an index or UUID as CUDA_VISIBLE_DEVICES names it, or "cpu"),
    in ``directory`` (default ``$GPUDL_LEASE_DIR``, else a folder of this user under the system's
    temporary folder): every grading run on this machine that grades on that device shares it."""
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,100}", gpu):
        raise LeaseError(f"not a device name for a lease: {gpu!r}")
    base = Path(directory or os.environ.get(LEASE_DIR_ENV) or Path(tempfile.gettempdir()) / f"gpudl-leases-{os.getuid()}")
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    return base / f"{gpu.replace(':', '_')}.lock"


def _try(fd: int, how: int) -> bool:
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise LeaseError(f"cannot lock a lease file: {exc}") from None


def _wait_for(fd: int, how: int, deadline: float | None) -> bool:
    """Take lock ``how`` on ``fd``, polling (a blocking flock cannot be given up in a thread);
    False when ``deadline`` (time.monotonic) passed first."""
    pause = 0.002
    while not _try(fd, how):
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.05)
    return True


class GpuLease:
    """The reader/writer lease of one device, as one process holds it (threads share it).

    ``shared()`` around a cell; ``exclusive()`` around a timed check, also from a thread of a process
    whose cell holds the shared lock (it is dropped while the exclusive lock is wanted and held, and
    taken again after). Both yield whether the lock was granted before ``timeout`` seconds."""

    def __init__(self, path: str | Path, *, timeout: float = 120.0):
        self.path = Path(path)
        self.timeout = timeout
        self.waited = 0.0                     # seconds spent waiting for a lock, in total
        try:
            self._main = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._gate = os.open(self.path.with_suffix(".turnstile"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise LeaseError(f"cannot open the lease file {self.path}: {exc}") from None
        self._state = threading.RLock()
        self._shared = 0                      # nesting depth of shared() in this process
        self._exclusive = False

    def close(self) -> None:
        for fd in (self._main, self._gate):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> "GpuLease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    @contextlib.contextmanager
    def shared(self, timeout: float | None = None) -> Iterator[bool]:
        """Hold the device with the other students (while one cell runs)."""
        with self._state:
            nested = self._shared > 0 or self._exclusive
            self._shared += 1
        granted = True
        if not nested:
            start = time.monotonic()
            deadline = self._deadline(timeout)
            granted = _wait_for(self._gate, fcntl.LOCK_EX, deadline)     # no new cell while a timed check waits
            if granted:
                try:
                    granted = _wait_for(self._main, fcntl.LOCK_SH, deadline)
                finally:
                    fcntl.flock(self._gate, fcntl.LOCK_UN)
            self.waited += time.monotonic() - start
        try:
            yield granted
        finally:
            with self._state:
                self._shared -= 1
                if self._shared == 0 and not self._exclusive:
                    fcntl.flock(self._main, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[bool]:
        """Hold the device alone (while a timed check measures)."""
        with self._state:
            if self._exclusive:
                raise LeaseError("the exclusive lease is already held by this process")
            self._exclusive = True
            if self._shared > 0:
                fcntl.flock(self._main, fcntl.LOCK_UN)       # our own cell waits on this check
        start = time.monotonic()
        deadline = self._deadline(timeout)
        gate = _wait_for(self._gate, fcntl.LOCK_EX, deadline)
        granted = gate and _wait_for(self._main, fcntl.LOCK_EX, deadline)
        self.waited += time.monotonic() - start
        try:
            yield granted
        finally:
            with self._state:
                self._exclusive = False
                if self._shared > 0:                                 # a cell of this student still runs
                    if granted:
                        fcntl.flock(self._main, fcntl.LOCK_SH)       # a downgrade: no writer can come in between
                    else:
                        _wait_for(self._main, fcntl.LOCK_SH, None)   # the cell goes on under the shared lock
                else:
                    fcntl.flock(self._main, fcntl.LOCK_UN)
                if gate:
                    fcntl.flock(self._gate, fcntl.LOCK_UN)


def memory_fraction_line(fraction: float) -> str:
    """One line of Python, run by the kernel before any cell, that bounds what torch may allocate on
    the GPU to ``fraction`` of it, once CUDA starts (nothing is started here); it leaves no name
    behind in the notebook's namespace."""
    if not 0 < fraction <= 1:
        raise ValueError(f"a GPU memory fraction is in (0, 1], got {fraction}")
    return ("(lambda t: t.cuda._lazy_call(lambda: t.cuda.set_per_process_memory_fraction("
            f"{fraction!r})))(__import__('torch'))")


__all__ = ["TIMED_CHECKS", "is_timed", "GpuLease", "lease_path", "memory_fraction_line", "OOM_NOTE", "LeaseError",
           "LEASE_DIR_ENV"]
