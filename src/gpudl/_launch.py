"""Launching Triton kernels with little host time (private helpers of the tuned kernels).

A launch from Python (``kernel[grid](...)``) binds and specializes every argument, looks the
compiled kernel up in a cache keyed by all of that and checks the kernel's globals before the
driver call: 20-30 us on the machines the course measures on, as long as a 1024^3 GEMM or
a batch of attention at L = 512 runs on an H100. When the host spends longer per call than the
GPU, the GPU idles between kernels, and the kernel's speed no longer matters.

``Relauncher`` keeps each compiled kernel the JIT returns, under a key that holds everything
Triton specializes a kernel on (dtypes, 16-byte alignment of pointers, integers' divisibility
by 16, equality to 1 and width, plus the constexprs and options), and launches it again
directly. It is used only with Triton versions whose compiled kernels take the bound
arguments in signature order (3.3 to 3.x, read in Triton's source); elsewhere it goes through
the JIT every time. ``_scratch`` gives device-side tensor descriptors (TMA) their global
scratch from a per-stream buffer instead of a new allocation each launch
(``ensure_tma_allocator`` installs it; it replaces any allocator set before in that thread).
``fastest`` is the tuned kernels' autotuner: it times candidate launches and keeps the fastest.
``compiled_for`` says whether Triton kernels run compiled (not interpreted) for a tensor,
``interpreting`` whether Triton interprets, ``check_runnable`` refuses tensors no Triton kernel can run
on here, ``input_precision`` ``tl.dot``'s precision for a dtype.
The tuned kernels' lean paths keep launches with ``keep_launch`` (TMA allocator included) for
tensors that are ``aligned`` and run them with ``run_kept`` (which gives up on a failure).
``give_up`` turns relaunching off for the rest of the process, once a relaunch has failed.
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (``TRITON_INTERPRET`` set; gpudl sets it
    on machines without a GPU): the one test of it for every Triton kernel in the package."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def check_runnable(t: Any) -> None:
    """Raise ValueError unless Triton can run a kernel on tensor ``t``: compiled, on a GPU, or
    interpreted, anywhere."""
    if not (t.is_cuda or interpreting()):
        raise ValueError(f"Triton compiles kernels for CUDA tensors only; got {t.device} tensors (on a machine "
                         "without a GPU gpudl sets TRITON_INTERPRET=1 before Triton is imported)")


def input_precision(dtype: Any) -> str:
    """``tl.dot``'s input precision for inputs of torch ``dtype``, as torch's own matmuls would
    multiply them: FP32 in TF32 only when ``torch.backends.cuda.matmul.allow_tf32`` is set, else
    in true FP32 ("ieee"). 16-bit inputs ignore the setting (they get "tf32", Triton's default)."""
    import torch

    if dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32:
        return "ieee"
    return "tf32"


def _version_ok() -> bool:
    try:
        import triton
    except ImportError:
        return False
    try:
        major, minor = (int(x) for x in triton.__version__.split(".")[:2])
    except ValueError:
        return False
    return (3, 3) <= (major, minor) < (4, 0) and not interpreting() and os.environ.get("GPUDL_TRITON_RELAUNCH",
                                                                                        "1") != "0"


RELAUNCH = _version_ok()


def _spec(args: tuple) -> tuple:
    """What Triton specializes a kernel on, for each runtime argument (a superset, to be safe)."""
    import torch

    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append((a.dtype, a.data_ptr() % 16 == 0))
        elif isinstance(a, bool):
            out.append(("b", a))
        elif isinstance(a, int):
            out.append((a % 16 == 0, a == 1, -2**31 <= a < 2**31))
        elif isinstance(a, float):
            out.append("f")
        else:
            out.append(type(a))
    return tuple(out)


class Relauncher:
    """``launch(grid, args, meta, tag)``: ``jit[grid](*args, **meta)``, the first time through the
    JIT, later directly on the compiled kernel it returned. ``args`` are the runtime arguments
    in signature order; ``meta`` every constexpr (by name) and launch option; ``tag`` a hashable
    that identifies ``meta`` (and the device)."""

    def __init__(self, jit: Any) -> None:
        self.jit = jit
        self.kernels: dict[tuple, tuple[Any, tuple]] = {}
        self.n_runtime, self.constexprs = -1, []
        if not RELAUNCH:                  # the interpreter, or a Triton whose launch convention is unknown
            return
        params = list(jit.params)
        first = next((i for i, p in enumerate(params) if p.is_constexpr), len(params))
        if any(not p.is_constexpr for p in params[first:]):
            raise ValueError(f"{jit.__name__}: constexpr parameters must come last for Relauncher")
        self.n_runtime = first
        self.constexprs = [p.name for p in params[first:]]

    def launch(self, grid: tuple, args: tuple, meta: dict[str, Any], tag: Any) -> None:
        if not RELAUNCH:
            self.jit[grid](*args, **meta)
            return
        key = (tag, _spec(args))
        found = self.kernels.get(key)
        if found is None:
            kernel = self.jit[grid](*args, **meta)
            if len(args) == self.n_runtime and all(name in meta for name in self.constexprs):
                self.kernels[key] = (kernel, tuple(meta[name] for name in self.constexprs))
            return
        kernel, constexprs = found
        try:
            kernel[(*grid, 1, 1)[:3]](*args, *constexprs)      # a compiled kernel's runner reads grid[0..2]
        except Exception:       # noqa: BLE001 - a Triton whose compiled kernels launch otherwise: use the JIT
            give_up()
            self.jit[grid](*args, **meta)

    def bound(self, grid: tuple, args: tuple, tag: Any, fixed_from: int) -> Callable[..., None] | None:
        """After a ``launch`` with these ``args`` and ``tag``: a function of the first
        ``fixed_from`` arguments that launches the same compiled kernel on ``grid`` with the
        rest of ``args`` (and the constexprs) as they were. The caller guarantees that what
        Triton specializes on is unchanged for those first arguments (dtype, 16-byte alignment).
        None when relaunching is off or that launch went through the JIT only."""
        found = self.kernels.get((tag, _spec(args))) if RELAUNCH else None
        if found is None:
            return None
        kernel, constexprs = found
        runner = kernel[(*grid, 1, 1)[:3]]
        rest = (*args[fixed_from:], *constexprs)

        def run(*first: Any) -> None:
            runner(*first, *rest)
        return run


def aligned(*tensors: Any) -> bool:
    """Every tensor given (None skipped) starts on a 16-byte boundary, as a kept launch assumes."""
    return not any(t is not None and t.data_ptr() % 16 for t in tensors)


def keep_launch(plans: dict, sig: tuple, relauncher: Relauncher, grid: tuple, args: tuple, tag: Any,
                fixed_from: int, tma: bool) -> None:
    """Keep ``relauncher.bound(...)`` in a lean path's ``plans`` under the call's signature ``sig``:
    with ``tma`` (a kernel that makes tensor descriptors) the launch first installs the TMA
    allocator, which Triton keeps per thread."""
    run = relauncher.bound(grid, args, tag, fixed_from)
    if run is None:
        return
    if not tma:
        plans[sig] = run
        return

    def plan(*first: Any) -> None:
        ensure_tma_allocator()
        run(*first)
    plans[sig] = plan


def run_kept(plans: dict, plan: Callable[..., None], *first: Any) -> bool:
    """Run a lean path's kept ``plan`` on this call's pointers. If it fails (a Triton whose
    compiled kernels launch otherwise), turn relaunching off, drop every kept plan and return
    False: the call takes the long way through the JIT."""
    try:
        plan(*first)
    except Exception:       # noqa: BLE001 - any failure of a kept launch means: use the JIT
        give_up()
        plans.clear()
        return False
    return True


def give_up() -> None:
    """Relaunching failed: every later launch of every kernel goes through the JIT (the kept
    compiled kernels are no longer used)."""
    global RELAUNCH
    RELAUNCH = False


_SCRATCH: dict[tuple, Any] = {}


def _scratch(size: int, alignment: int, stream: Any) -> Any:
    """Global scratch for a launch: one buffer per (size, stream, device), reused (launches on one
    stream run one after another). Not cached while a CUDA graph is being captured."""
    import torch

    if torch.cuda.is_current_stream_capturing():
        return torch.empty(size, device="cuda", dtype=torch.int8)
    key = (size, stream, torch.cuda.current_device())
    buf = _SCRATCH.get(key)
    if buf is None:
        buf = _SCRATCH[key] = torch.empty(size, device="cuda", dtype=torch.int8)
    return buf


_ALLOCATOR_SET = threading.local()


def ensure_tma_allocator() -> None:
    """Device-side tensor descriptors (TMA) need global scratch memory from an allocator that
    Triton calls at launch: set ours (``triton.set_allocator``; Triton keeps one per thread)
    the first time a thread launches such a kernel."""
    if not getattr(_ALLOCATOR_SET, "done", False):
        import triton

        triton.set_allocator(_scratch)
        _ALLOCATOR_SET.done = True


def compiled_for(t: Any) -> bool:
    """Whether a Triton kernel given tensor ``t`` runs compiled: ``t`` is on a GPU and Triton is not
    interpreting (gpudl sets ``TRITON_INTERPRET=1`` on machines without one)."""
    return bool(t.is_cuda) and not interpreting()


def _out_of_resources(e: Exception) -> bool:
    return "resource" in type(e).__name__.lower() or "shared memory" in str(e)


def fastest(candidates: Any, run: Callable[[Any], None], *, warm_s: float = 0.3, finalists: int = 3,
            turns: int = 5) -> Any:
    """The candidate (a kernel configuration) whose launch ``run(candidate)`` is fastest on the GPU.

    A GPU boosts its clock after idling and settles lower under sustained work: timed one after
    another from idle, the first candidates would look faster than they are. So the first
    candidate first runs untimed for ``warm_s``; then every candidate is timed once
    (``triton.testing.do_bench``: L2 flushed, median), and the ``finalists`` fastest race again,
    ``turns`` times in turns, judged on those turns alone (at 1024^3 a run takes microseconds and
    one median can be off by 5%). Candidates that do not fit the GPU (out of shared memory or
    registers) are skipped; any other error is raised."""
    import time

    import torch
    import triton.testing

    def timed(c: Any) -> float:
        return triton.testing.do_bench(lambda: run(c), return_mode="median")

    first: dict[Any, float] = {}
    for c in candidates:
        try:
            if not first:
                start = time.perf_counter()
                while time.perf_counter() - start < warm_s:
                    run(c)
                    torch.cuda.synchronize()
            first[c] = timed(c)
        except Exception as e:      # noqa: BLE001 - a tile that does not fit this GPU or dtype
            if not _out_of_resources(e):
                raise
    if not first:
        raise RuntimeError("no candidate configuration fits this GPU")
    front = sorted(first, key=first.get)[:finalists]
    race: dict[Any, list[float]] = {c: [] for c in front}
    for _ in range(turns):
        for c in front:
            race[c].append(timed(c))
    return min(front, key=lambda c: sorted(race[c])[len(race[c]) // 2])
