"""A sandbox per student: what a graded notebook's kernel can see, reach and use.

``gpudl grade`` starts each student's kernel inside bubblewrap (``bwrap``, Debian package
``bubblewrap``), with no Docker daemon:

- namespaces of its own: PIDs (nothing outside is visible; when the sandbox ends, everything
  it started ends with it), network (loopback of its own, nothing of the machine's), IPC, UTS;
  as an unprivileged instructor also a user namespace;
- a filesystem of read-only system directories and Python environment (the interpreter, its
  site-packages, the gpudl package), a writable home of bounded size (a tmpfs) that holds
  nothing at the start, the kernel's socket folder, and the checker's socket; nothing of the
  course, the grading output, other submissions, the secret or the instructor's home;
- limits: memory (``RLIMIT_DATA``: private writable memory, which leaves CUDA's address-space
  reservations alone), CPU seconds, processes (``RLIMIT_NPROC``; run as root, the kernel runs
  under a user id of its own so the count is the sandbox's alone), file size, open files, and
  the home's size;
- no new privileges, no environment from the grader (``--clearenv``), and on a GPU machine
  the NVIDIA device nodes and nothing else of ``/dev``.

``available()`` says whether bubblewrap works here (``gpudl doctor`` reports it); where it does
not, ``gpudl grade`` refuses, unless the instructor passes ``--unsafe-no-sandbox``.

Public names: ``Limits``, ``Sandbox``, ``available``, ``kill_uid``.
"""
from __future__ import annotations

import functools
import glob
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

HOME = "/home/student"            # the kernel's home and working directory inside the sandbox
CHECKER_SOCKET = "/run/gpudl/checker.sock"


@dataclass(frozen=True)
class Limits:
    """Bounds on one student's sandbox (bytes, seconds, counts)."""

    memory_bytes: int = 6 << 30          # private writable memory of each process
    cpu_seconds: int = 1800              # CPU time of each process
    processes: int = 256                 # tasks (processes and threads) of the sandbox
    file_bytes: int = 256 << 20          # largest file it may write
    open_files: int = 1024
    home_bytes: int = 512 << 20          # size of the writable home (a tmpfs)

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "cpu_seconds", "processes", "file_bytes", "open_files", "home_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"sandbox limit {name} must be positive, got {getattr(self, name)}")


# Runs first inside the sandbox (as root when the grader is root): limits, then the user id of
# the sandbox, then no new privileges, then the kernel. `python -I -S`: no site, no environment.
_LAUNCHER = r"""
import ctypes, os, resource, sys
a = sys.argv[1:]
i = a.index("--")
opts = dict(x.split("=", 1) for x in a[:i])
cmd = a[i + 1:]
for k, v in opts.items():
    if k.startswith("RLIMIT_"):
        n = int(v)
        resource.setrlimit(getattr(resource, k), (n, n))
uid = int(opts.get("uid", "-1"))
if uid >= 0:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)
os.umask(0o077)
os.execv(cmd[0], cmd)
"""


def _processes() -> list[tuple[int, int]]:
    """(pid, real uid) of every process this machine shows."""
    found = []
    for status in glob.glob("/proc/[0-9]*/status"):
        try:
            with open(status) as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        found.append((int(status.split("/")[2]), int(line.split()[1])))
                        break
        except (OSError, ValueError):
            continue
    return found


def _own_process_count() -> int:
    uid = os.getuid()
    return sum(1 for _, u in _processes() if u == uid)


def _python_paths() -> list[str]:
    """What the kernel's interpreter needs to read: its installation, the virtual environment's
    site-packages, the package's source (an editable install) and the folders named in
    ``PYTHONPATH``; never ``sys.path`` as such (a script's or pytest's folder would expose /tmp or
    the tests), never a folder that holds a course, nor /tmp, /home, /root or / themselves."""
    import site

    import gpudl

    package_dir = str(Path(gpudl.__file__).resolve().parent)       # the course edition, not its src/ folder
    paths = {sys.base_prefix, sys.prefix, package_dir, str(Path(sys.executable).resolve().parent)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths()[key])
    paths.update(site.getsitepackages())
    paths.update(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    too_wide = {"/", "/tmp", "/home", "/root", "/work", "/usr", "/var", "/etc", str(Path.home())}
    out = []
    for p in sorted({os.path.abspath(p) for p in paths if p and os.path.isdir(p)}):
        if p in too_wide or (Path(p) / "solutions").is_dir() or (Path(p) / "nbgrader_config.py").exists():
            continue
        if Path(p).name.startswith("gpudl-grade-") or "/gpudl-grade-" in p:
            continue
        out.append(p)
    return out


def _instructor_paths(mounted: list[str]) -> list[str]:
    """The folders of the instructor's part (this package, and any other copy an installation left
    in site-packages) that lie inside a folder the sandbox mounts: each is covered by an empty one,
    so a student's kernel sees the course edition and nothing of the references or the checks."""
    import importlib.util

    here = Path(__file__).resolve().parent
    found = {here}
    for base in mounted:
        found.update(Path(base).glob("gpudl_instructor"))
    spec = importlib.util.find_spec("gpudl_instructor")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        found.add(Path(loc).resolve())
    return sorted(str(f) for f in found
                  if f.is_dir() and any(f == Path(m) or Path(m) in f.parents for m in mounted))


def _gpu_devices() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri/*"))


@functools.lru_cache(maxsize=1)
def available() -> tuple[bool, str]:
    """(whether the sandbox works here, why not). Runs a trivial command in a sandbox."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        probe = Sandbox(home=None, kernel_dir=None, limits=Limits())
        res = subprocess.run(probe.command([sys.executable, "-I", "-S", "-c", "print('ok')"]),
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bubblewrap failed to start: {exc}"
    if res.returncode != 0 or res.stdout.strip() != "ok":
        why = (res.stderr.strip().splitlines() or ["no output"])[-1]
        return False, (f"bubblewrap cannot make a sandbox here ({why}); user namespaces may be disabled "
                       "(sysctl kernel.unprivileged_userns_clone=1, or run the grader as root)")
    return True, ""


def _pick_uid() -> int:
    """A user id no process uses, for one sandbox (only when the grader runs as root)."""
    used = {u for _, u in _processes()}
    while True:
        uid = 200_000 + secrets.randbelow(800_000)
        if uid not in used:
            return uid


def kill_uid(uid: int) -> int:
    """SIGKILL every process of ``uid`` (the sandbox's own user id when the grader is root);
    returns how many were signalled."""
    killed = 0
    for _ in range(5):          # a fork bomb refills between scans
        mine = [pid for pid, u in _processes() if u == uid]
        for pid in mine:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        killed += len(mine)
        if not mine:
            break
    return killed


@dataclass
class Sandbox:
    """One student's sandbox. ``home`` and ``kernel_dir`` are host folders (None: none);
    ``home`` is only used without bubblewrap's tmpfs (never), so it may be None."""

    home: Path | None
    kernel_dir: Path | None
    limits: Limits = field(default_factory=Limits)
    checker_socket: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    gpu: bool = False
    uid: int | None = None

    def __post_init__(self) -> None:
        if self.uid is None and os.geteuid() == 0:
            self.uid = _pick_uid()

    def prepare(self) -> None:
        """Make the host folders the sandbox writes into its own (when the grader is root)."""
        if self.kernel_dir is not None:
            self.kernel_dir.mkdir(parents=True, exist_ok=True)
            if self.uid is not None:
                os.chown(self.kernel_dir, self.uid, self.uid)
            self.kernel_dir.chmod(0o700)

    def give(self, path: Path) -> None:
        """Let the sandbox's user read a file the grader wrote into its folders."""
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)

    def _environment(self) -> dict[str, str]:
        venv_bin = str(Path(sys.executable).parent)
        env = {
            "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": HOME, "USER": "student", "LOGNAME": "student",
            "TMPDIR": "/tmp", "MPLCONFIGDIR": f"{HOME}/.matplotlib", "IPYTHONDIR": f"{HOME}/.ipython",
            "XDG_CACHE_HOME": f"{HOME}/.cache", "TRITON_CACHE_DIR": f"{HOME}/.triton",
            "NUMBA_CACHE_DIR": f"{HOME}/.numba", "JUPYTER_RUNTIME_DIR": f"{HOME}/.jupyter",
            "LANG": "C.UTF-8", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        }
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = ":".join(p for p in os.environ["PYTHONPATH"].split(":")
                                         if p and os.path.isdir(p) and p in _python_paths())
        for name in ("CUDA_VISIBLE_DEVICES", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                     "NVSHMEM_DISABLE_NVLS", "GPUDL_DEVICE", "GPUDL_SANITIZE", "TRITON_INTERPRET",
                     "NUMBA_ENABLE_CUDASIM", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "NUMBA_NUM_THREADS"):
            if name in os.environ:
                env[name] = os.environ[name]
        if self.checker_socket is not None:
            env["GPUDL_CHECKER"] = CHECKER_SOCKET
        env.update(self.env)
        return env

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` wrapped: bubblewrap, then the launcher (limits, user id), then ``argv``."""
        root = os.geteuid() == 0
        args = ["bwrap", "--die-with-parent", "--new-session"]
        if root:
            args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        else:
            args += ["--unshare-all", "--unshare-user"]
        for d in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"):
            if os.path.lexists(d):
                if os.path.islink(d):
                    args += ["--symlink", os.readlink(d), d]
                else:
                    args += ["--ro-bind", d, d]
        args += ["--perms", "0755", "--dir", "/etc"]
        for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
                  "/etc/nsswitch.conf", "/etc/alternatives", "/etc/fonts", "/etc/passwd", "/etc/group",
                  "/etc/hosts"):
            args += ["--ro-bind-try", f, f]
        # The sandbox's own /tmp and home first: binds below may live under /tmp on the host.
        args += ["--perms", "1777", "--size", str(self.limits.home_bytes), "--tmpfs", HOME,
                 "--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/tmp"]
        python = _python_paths()
        mounts = python + [str(self.kernel_dir)] * (self.kernel_dir is not None) + [CHECKER_SOCKET, HOME]
        parents = sorted({str(a) for m in mounts for a in Path(m).parents if str(a) not in ("/", "/usr")},
                         key=lambda d: (d.count("/"), d))
        for d in parents:          # made world-traversable, whatever the grader's umask
            if not d.startswith("/usr/") and d not in ("/tmp", HOME):
                args += ["--perms", "0755", "--dir", d]
        for p in python:
            args += ["--ro-bind", p, p]
        for hidden in _instructor_paths(python):      # the instructor's part, wherever it is installed: empty
            args += ["--tmpfs", hidden, "--remount-ro", hidden]
        args += ["--proc", "/proc", "--dev", "/dev"]
        if self.gpu:
            for dev in _gpu_devices():
                args += ["--dev-bind", dev, dev]
            args += ["--ro-bind-try", "/sys", "/sys", "--ro-bind-try", "/usr/local/nvidia", "/usr/local/nvidia"]
        if self.kernel_dir is not None:
            args += ["--bind", str(self.kernel_dir), str(self.kernel_dir)]
        if self.checker_socket is not None:
            args += ["--ro-bind", str(self.checker_socket), CHECKER_SOCKET]
        args += ["--chdir", HOME, "--clearenv"]
        for k, v in self._environment().items():
            args += ["--setenv", k, v]
        nproc = self.limits.processes if (root and self.uid is not None) else self.limits.processes + _own_process_count()
        limits = {"RLIMIT_DATA": self.limits.memory_bytes, "RLIMIT_CPU": self.limits.cpu_seconds,
                  "RLIMIT_NPROC": nproc, "RLIMIT_FSIZE": self.limits.file_bytes,
                  "RLIMIT_NOFILE": self.limits.open_files, "RLIMIT_CORE": 0}
        launcher = [sys.executable, "-I", "-S", "-c", _LAUNCHER, *(f"{k}={v}" for k, v in limits.items())]
        if root and self.uid is not None:
            launcher.append(f"uid={self.uid}")
        return args + ["--"] + launcher + ["--", *argv]

    def kill(self) -> None:
        """End everything left in the sandbox (the pid namespace ends with bubblewrap; when the
        grader is root, also every process of the sandbox's user id)."""
        if self.uid is not None:
            kill_uid(self.uid)


__all__ = ["Limits", "Sandbox", "available", "kill_uid", "HOME", "CHECKER_SOCKET"]
