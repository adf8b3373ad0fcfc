"""The guard: what a check forbids while a student's code runs.

``guard(*forbidden, label=...)`` is a context manager. Inside it, a call of anything it forbids
raises ``ReferenceUsedError`` with a message that names the call and the exercise. It forbids
two kinds of thing:

- the package's references (functions decorated with ``@reference``): the wrapper refuses calls
  from code outside the package (``gpudl.references``);
- library routines, by dotted name (``"torch.nn.functional.conv2d"``, ``"numpy.einsum"``);
- a torch dtype, by its name (``"torch.bfloat16"``): any torch function that returns a tensor of
  it is refused, whatever cast or factory made it (``torch.tensor(x, dtype=...)``, ``as_tensor``,
  ``copy_`` into one, ``.view(dtype)``), where a check compares with torch's cast to a format.

A student can reach a routine under another name than the one the check wrote, so each kind is
watched at more than one door:

1. **The name itself.** The routine's attribute is replaced, for the block, by one that raises.
2. **torch's other names for it.** A torch routine is caught under every name torch gives it
   (``torch.softmax`` is also ``x.softmax``, ``torch.nn.functional.softmax`` and
   ``torch.special.softmax``; ``torch.matmul`` is also ``x.matmul`` and ``a @ b``), and under any
   alias made before the block, and so is any torch routine of the same name elsewhere: an
   operator of ``torch.ops`` (``torch.ops.aten.softmax``), a function of another namespace, the
   out-of-place twin of an in-place routine (``_amp_update_scale`` of ``_amp_update_scale_``).
   torch hands every call of its operators and higher-order operators (``handed_to_modes``) to
   the active ``TorchFunctionMode``, which here refuses the forbidden ones. Where anything of
   torch is refused, so is calling a TorchScript function (``torch.jit``): it runs its operators
   from C++, where neither the mode nor the hook sees them.
3. **Aliases of everything else.** A routine imported earlier under another name, or the function
   underneath a reference (reached through the wrapper's ``__closure__``, or rebuilt from its code),
   is noticed by a profile hook (``sys.setprofile``) that compares each call's code or C function
   with the forbidden ones; the block raises when it ends. numpy's functions are dispatchers
   written in C, watched through the implementation they wrap (``numpy.einsum``'s is Python code;
   ``numpy.dot``'s is C, whose calls from C are no events, so only its name). A class is watched
   through its own Python ``__init__``; a class written in C (``numpy.float16``) only through its
   name.

A refusal counts even when the code catches it and goes on: the block raises when it ends, naming
the first forbidden call. Threads started inside the block get the same watch (doors 2 and 3).
``torch_outputs(watcher)`` hands every tensor a torch function returns to ``watcher``, through the
guard's own mode where one watches torch (so in its threads too: one mode per thread).

The guard watches one process. While it is open, the code it watches may not start another (a child
Python would run any forbidden routine unwatched): an audit hook (``sys.addaudithook``; once added,
nothing removes it) refuses ``subprocess``, ``os.system``, ``os.fork``, ``posix_spawn`` and exec,
and multiprocessing's spawn through ``_posixsubprocess.fork_exec``, unless the request comes from
one of the libraries the checks need (``_PROCESS_STARTERS``: Triton runs ptxas, torch its
compilers); the package's ``gpudl.collectives.launch``, ``gpudl.profiling.ncu_metrics`` and
``gpudl.cuda_model.sanitize``, which run code they are given in another process, refuse a caller
outside the package. A process started before the block is no start the hook sees: in the grading
sandbox a guard refuses to open while any other process lives there, in a student's Jupyter kernel
while one the kernel started does (``other_processes``).
The hook costs time on every call the interpreter makes (about 3x on the Triton interpreter's
kernels), so it is installed only when door 3 has something to watch: a torch routine needs only
door 2.

None of this stops code that sets out to switch the guard off (``sys.setprofile(None)``,
``torch._C.DisableTorchFunction()``, rebinding the guard, code compiled by ``torch.compile``):
such code is flagged for the
instructor's review (``gpudl_instructor.submissions.review_flags``), and the verdicts are reached
outside the student's process.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import sys
import threading
from typing import Any, Callable, Iterator, NoReturn

from .. import references as _references
from ..references import ReferenceUsedError, labels as _guard_label
from ..references import forbidden_now as _forbidden_now


def _resolve(dotted: str) -> tuple[Any, str]:
    module_name, _, attr = dotted.rpartition(".")
    # allow "torch.nn.functional.conv2d" (module path) and "torch.Tensor.matmul" (class attr)
    parts = module_name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for p in parts[cut:]:
            obj = getattr(obj, p)
        return obj, attr
    raise ValueError(f"cannot resolve {dotted!r}")


# --- door 2: torch's names for a routine ----------------------------------------------------

_TORCH_ROUTINES: dict[Any, str] = {}     # torch's overridable functions: callable -> dotted name


def _torch_routines() -> dict[Any, str]:
    """{callable: dotted name} of every torch function that torch hands to a ``TorchFunctionMode``.
    Built once, before any guard has replaced an attribute of torch."""
    if not _TORCH_ROUTINES:
        from torch.overrides import get_overridable_functions, resolve_name

        for functions in get_overridable_functions().values():
            for fn in functions:
                dotted = resolve_name(fn)
                if dotted:
                    _TORCH_ROUTINES[fn] = dotted
    return _TORCH_ROUTINES


def _routine(dotted: str) -> str:
    """The routine a dotted name stands for, whatever torch namespace it is in (``softmax`` for
    ``torch.special.softmax``); a dunder (``torch.Tensor.T.__get__``) stands only for itself."""
    last = dotted.rpartition(".")[2]
    return dotted if last.startswith("__") else last


def _overridable_name(original: Any) -> str | None:
    """``original``'s dotted name among torch's overridable functions; None when it is not one
    (or torch is not imported, or ``original`` is not hashable, so not a function)."""
    if "torch" not in sys.modules:
        return None
    try:
        return _torch_routines().get(original)
    except TypeError:
        return None


def torch_names(original: Any) -> dict[Any, str]:
    """{callable: dotted name} for every name torch gives the routine ``original``, its private
    bindings included (``torch._VF.einsum`` for ``torch.einsum``); empty when it is not one of
    torch's overridable functions."""
    dotted = _overridable_name(original)
    return dict(_names_of(_routine(dotted))) if dotted is not None else {}


@functools.cache
def _names_of(routine: str) -> tuple[tuple[Any, str], ...]:
    """(callable, dotted name) of every torch function of the routine ``routine``, found once."""
    # torch's private bindings of the routine (torch._VF.einsum, torch._C._nn.im2col) are not listed:
    # the mode refuses them by name (_same_name)
    return tuple((fn, name) for fn, name in _torch_routines().items() if _routine(name) == routine)


# The modules of torch's generated operator bindings besides torch._C._VariableFunctions (torch.*)
_BINDINGS = {"torch._C._nn", "torch._C._special", "torch._C._linalg", "torch._C._fft", "torch._C._nested",
             "torch._C._sparse"}


def handed_to_modes(original: Any) -> bool:
    """Whether torch hands every call of ``original`` to the active ``TorchFunctionMode``: its
    overridable functions, every generated binding of an operator, the private ones too
    (``torch._int_mm``, ``torch._softmax``), which ``get_overridable_functions`` leaves out, and
    its higher-order operators."""
    if _overridable_name(original) is not None:
        return True
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    if isinstance(original, torch._ops.HigherOrderOperator):    # flex_attention's operator, for one
        return True
    name = getattr(original, "__name__", None)
    if name and getattr(torch._C._VariableFunctions, name, None) is original:
        return True
    owner = getattr(original, "__self__", None)
    return getattr(owner, "__name__", None) in _BINDINGS


def _name_key(name: str) -> str:
    """A routine's name without the trailing underscore of its in-place form (``add_`` -> ``add``)."""
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


def _same_name(func: Any, names: set[str]) -> str | None:
    """The dotted name of ``func`` when it is a torch routine of one of ``names`` under another
    name than the ones the guard resolved: an operator of ``torch.ops`` (``torch.ops.aten.bmm``), a
    function of another namespace (``torch.sparse.softmax``), or the in-place or out-of-place twin
    (``_amp_update_scale`` of ``_amp_update_scale_``). None otherwise."""
    operator = _operator_name(func)
    short = _routine(operator) if operator is not None else getattr(func, "__name__", None)
    if not isinstance(short, str) or _name_key(short) not in names:
        return None
    if operator is not None:
        return operator
    return f"{getattr(func, '__module__', None) or 'torch'}.{short}"


def _operator_name(func: Any) -> str | None:
    """``torch.ops.NAMESPACE.NAME`` for an operator reached through ``torch.ops`` (the packet
    ``torch.ops.aten.bmm`` or an overload such as ``torch.ops.aten.bmm.default``); None otherwise."""
    from torch._ops import OpOverload, OpOverloadPacket

    if isinstance(func, OpOverload):
        qualified = func._schema.name
    elif isinstance(func, OpOverloadPacket):
        qualified = func._qualified_op_name
    else:
        return None
    namespace, _, name = qualified.partition("::")
    return f"torch.ops.{namespace}.{name}"


@functools.cache
def _refusing_mode_class() -> type:
    """The class of ``_refusing_mode`` (made on first use: torch is imported only where needed)."""
    from torch.overrides import TorchFunctionMode

    class RefuseTorchRoutines(TorchFunctionMode):
        def __init__(self, refused: dict[Any, str], made: dict[Any, str], label: str, seen: list[str]):
            super().__init__()
            self.refused, self.made, self.label, self.seen, self.active = refused, made, label, seen, True
            # the refused routines' names, for what torch calls them elsewhere (``_same_name``)
            self.names = {_name_key(_routine(name)) for name in refused.values()}

        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = self.refused.get(func) if self.active else None
            if name is None and self.active:
                name = _same_name(func, self.names)
            if name is not None:
                _refuse(self.seen, name, self.label)
            out = func(*args, **(kwargs or {}))
            if self.active and (self.made or _OUTPUT_WATCHERS):
                for tensor in _tensors(out):
                    dtype = self.made.get(tensor.dtype)
                    if dtype is not None:
                        _refuse(self.seen, _made_name(dtype), self.label)
                    for watcher in tuple(_OUTPUT_WATCHERS):
                        watcher(tensor)
            return out

    return RefuseTorchRoutines


def _refusing_mode(refused: dict[Any, str], made: dict[Any, str], label: str, seen: list[str]) -> Any:
    """A ``TorchFunctionMode`` that, while its ``active`` is true, raises on the callables in
    ``refused`` and on any torch function that returns a tensor of a dtype in ``made``, noting
    the first in ``seen``, and hands every tensor a torch function returns to the watchers of
    ``torch_outputs``; it passes every call through otherwise."""
    return _refusing_mode_class()(refused, made, label, seen)


def _tensors(out: Any) -> Iterator[Any]:
    """The tensors a torch function returned: ``out`` itself, or those in a tuple or list of them."""
    import torch

    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, (tuple, list)):
        for item in out:
            yield from _tensors(item)


def _made_name(dotted: str) -> str:
    """What the guard calls making a tensor of the refused dtype ``dotted`` ("torch.bfloat16")."""
    return f"a {dotted} tensor"


# The callbacks of ``torch_outputs`` blocks now open: each gets every tensor a torch function returns.
_OUTPUT_WATCHERS: list[Callable[[Any], None]] = []


@contextlib.contextmanager
def torch_outputs(watcher: Callable[[Any], None]) -> Iterator[None]:
    """Inside the block, ``watcher(tensor)`` for each tensor a torch function returns (the torch
    function mode sees methods, operators and ``torch.*`` however they are reached). Inside a
    guard that watches torch, the guard's own mode calls it, on the threads the guard watches too:
    one mode per thread (two Python modes on one thread can crash torch as the thread ends).
    Elsewhere, a mode of its own on this thread. Without torch, nothing to watch."""
    if importlib.util.find_spec("torch") is None:
        yield
        return
    from torch.overrides import _get_current_function_mode_stack

    cls = _refusing_mode_class()
    guarded = any(isinstance(m, cls) and m.active for m in _get_current_function_mode_stack())
    depth = _mode_depth()
    _OUTPUT_WATCHERS.append(watcher)
    try:
        if not guarded:
            _refusing_mode({}, {}, "", []).__enter__()
        yield
    finally:
        _OUTPUT_WATCHERS.remove(watcher)
        if not guarded:
            _unwind_modes(depth)


def _mode_depth() -> int:
    """How many modes are on this thread's stack of torch function modes."""
    return sys.modules["torch"]._C._len_torch_function_stack()


def _unwind_modes(depth: int) -> None:
    """Pop this thread's torch function modes down to ``depth``: the guard's own, and any mode the
    student's code pushed above it and left there. A mode below ``depth`` (an outer guard's) stays,
    even when the code popped the guard's own mode."""
    from torch.overrides import _pop_mode

    while _mode_depth() > depth:
        _pop_mode()


class _PopModes:
    """Pops its thread's torch function modes down to ``depth`` when it dies: with the thread's
    locals, as the thread's Python state is cleared, which holds the GIL. A mode still on the stack
    after that is released by torch's thread-local teardown without the GIL, which can crash the
    process while another thread runs Python."""

    def __init__(self, depth: int):
        self.depth = depth

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            _unwind_modes(self.depth)


_THREAD_EXIT = threading.local()


def _pop_at_thread_exit(depth: int) -> None:
    """When this thread ends, pop the torch function modes above ``depth`` (see ``_PopModes``)."""
    if getattr(_THREAD_EXIT, "modes", None) is None:
        _THREAD_EXIT.modes = _PopModes(depth)


# --- another process -------------------------------------------------------------------------------
# The guard watches one process; a child Python would run any forbidden routine unwatched. While a
# guard is open, only the libraries a check's own work needs may start a process (Triton runs ptxas
# and a C compiler, torch's compilers theirs, matplotlib fc-list); code that asks for one from
# anywhere else (the student's code, or a library that runs any command it is given, such as
# IPython's) is refused. Python's audit events for it are watched (a hook that, once added, stays
# for the process's life, so code cannot remove it), and so is the C function multiprocessing's
# spawn calls without one.

_PROCESS_EVENTS = frozenset({"os.fork", "os.forkpty", "os.system", "os.posix_spawn", "os.exec", "os.spawn",
                             "subprocess.Popen", "pty.spawn"})
# The installed packages that may start a process while a guard is open (their top-level names)
_PROCESS_STARTERS = frozenset({"torch", "triton", "numba", "numba_cuda", "cupy", "cuda", "nvidia", "matplotlib",
                               "gpudl", "gpudl_instructor"})
_OPEN_GUARDS: list[tuple[list[str], str]] = []   # the open guards' (seen, label), the innermost last
_FILE_OWNER: dict[str, str] = {}                # file name -> the package it belongs to, "stdlib" or ""


def _file_owner(code: Any) -> str:
    """The top-level package whose file ``code`` was compiled from ("torch"; "gpudl" for the
    package's own, wherever it is), "stdlib" for the standard library's, "" for the rest: a
    notebook's cells, a script, a test."""
    name = code.co_filename
    owner = _FILE_OWNER.get(name)
    if owner is None:
        import site
        import sysconfig

        paths = sysconfig.get_paths()
        real = os.path.realpath(name) if not name.startswith("<") else name
        libraries = {paths["purelib"], paths["platlib"], *site.getsitepackages(), site.getusersitepackages()}
        inside = [os.path.relpath(real, d) for d in libraries
                  if real.startswith(os.path.join(d, "")) and os.path.isfile(real)]   # not a made-up name
        if _references.in_package(code):
            owner = "gpudl"
        elif inside:
            owner = inside[0].split(os.sep)[0].removesuffix(".py")
        elif name.startswith("<frozen ") or real.startswith(
                tuple(os.path.join(os.path.realpath(paths[k]), "") for k in ("stdlib", "platstdlib"))):
            owner = "stdlib"
        else:
            owner = ""
        _FILE_OWNER[name] = owner
    return owner


def _started_by_a_starter(frame: Any) -> bool:
    """Whether, walking out from ``frame`` past the standard library's frames, the first frame is
    one of ``_PROCESS_STARTERS``'s: not when it is the student's code, another library's, or
    nothing but the standard library (a thread's target)."""
    while frame is not None:
        owner = _file_owner(frame.f_code)
        if owner != "stdlib":
            return owner in _PROCESS_STARTERS
        frame = frame.f_back
    return False


def refuse_another_process(what: str, frame: Any) -> None:
    """While a guard is open, refuse ``what`` (a new process, or a package function that starts some)
    unless the code that asked for it (``frame``, walking out past the standard library) is one of
    ``_PROCESS_STARTERS``; the refusal counts even when the code catches it. A no-op outside a guard."""
    if not _OPEN_GUARDS or _started_by_a_starter(frame):
        return
    seen, label = _OPEN_GUARDS[-1]
    _refuse(seen, f"{_ANOTHER_PROCESS} ({what})", label)


def _audit(event: str, _args: tuple) -> None:
    if event in _PROCESS_EVENTS and _OPEN_GUARDS:
        refuse_another_process(event, sys._getframe(1))


@functools.cache
def _add_audit_hook() -> None:
    """``_audit`` as an audit hook of this process, once."""
    sys.addaudithook(_audit)


def _refusing_fork_exec(original: Callable) -> Callable:
    """``_posixsubprocess.fork_exec`` (multiprocessing's spawn calls it, with no audit event) that
    refuses a call from outside ``_PROCESS_STARTERS`` while a guard is open."""
    @functools.wraps(original)
    def fork_exec(*args, **kwargs):
        refuse_another_process("_posixsubprocess.fork_exec", sys._getframe(1))
        return original(*args, **kwargs)
    fork_exec.__gpudl_refusing__ = True
    return fork_exec


def _watch_processes() -> list[tuple[Any, str, Any]]:
    """Add the audit hook (once); return (owner, attribute, replacement) for the fork_exec names to
    replace while the guard is open."""
    _add_audit_hook()
    out = []
    for module, attr in (("_posixsubprocess", "fork_exec"), ("subprocess", "_fork_exec")):
        with contextlib.suppress(ImportError):      # imported here, so one imported later is replaced too
            importlib.import_module(module)
        original = getattr(sys.modules.get(module), attr, None)
        if original is not None and not getattr(original, "__gpudl_refusing__", False):   # an outer guard's
            out.append((sys.modules[module], attr, _refusing_fork_exec(original)))
    return out


# A process started before the check (a server at the notebook's top that the code then asks over a
# pipe) is no start the guard sees. In the grading sandbox, whose PID namespace holds nothing but the
# sandbox (bubblewrap is its PID 1, the kernel its child), a guard therefore first looks for any other
# process still alive, and refuses to run the check while one is; in a student's own Jupyter kernel
# (the visible tests) it looks at the processes the kernel started, so the rule holds there too. The package's launcher keeps a zygote
# (a process that forks launch's workers): one started while a guard was open (lab 10's checks) stays;
# one started outside a guard (by the student's own launch) is ended, and the next launch starts another.

@functools.cache
def _in_the_grading_sandbox() -> bool:
    """Whether this process runs in a PID namespace of bubblewrap's (``gpudl grade``'s sandbox)."""
    try:
        with open("/proc/1/comm") as f:
            return f.read().strip() == "bwrap" and os.getpid() != 1
    except OSError:
        return False


def _processes() -> dict[int, tuple[int, str]]:
    """{pid: (parent pid, state)} of every process this one can see in /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue                  # ended meanwhile
            out[int(name)] = (int(fields[1]), fields[0])
    return out


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            text = f.read(400).replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
    return text if len(text) <= 120 else text[:117] + "..."


def _package_helpers() -> set[int]:
    """The pids of the package's own helper processes a check may find alive: the launcher's zygote
    when a guard was open as it started (one started outside a guard is ended here), and
    multiprocessing's resource tracker (it only unlinks what a process leaves behind)."""
    kept: set[int] = set()
    launcher = sys.modules.get("gpudl.collectives.launch")
    zygote = getattr(launcher, "_zygote", None)
    if zygote is not None and zygote.alive():
        if getattr(zygote, "under_a_guard", False):
            kept.add(zygote.proc.pid)
        else:
            launcher.shutdown()
    tracker = getattr(sys.modules.get("multiprocessing.resource_tracker"), "_resource_tracker", None)
    if getattr(tracker, "_pid", None):
        kept.add(tracker._pid)
    return kept


def _in_a_jupyter_kernel() -> bool:
    """Whether this process is a running Jupyter kernel (a student's own, where the visible tests run)."""
    app = sys.modules.get("ipykernel.kernelapp")
    return bool(app is not None and app.IPKernelApp.initialized())


def other_processes() -> list[str]:
    """"pid N: command line" for each live process a check could be asked to trust: in the grading
    sandbox, any but this one and its ancestors; in a student's own Jupyter kernel (the visible
    tests), those this kernel started; the package's helpers aside. Elsewhere (a script, the tests),
    and where there is no /proc, nothing."""
    sandboxed = _in_the_grading_sandbox()
    if not (sandboxed or _in_a_jupyter_kernel()) or not os.path.isdir("/proc/self"):
        return []
    helpers = _package_helpers()
    table = _processes()
    line = [os.getpid()]                          # this process and its ancestors, bubblewrap last
    while (parent := table.get(line[-1], (0, ""))[0]) in table and parent not in line:
        line.append(parent)
    children: dict[int, list[int]] = {}
    for p, (parent, _state) in table.items():
        children.setdefault(parent, []).append(p)
    kept, todo = set(line), list(helpers)          # the helpers and what they started
    while todo:
        p = todo.pop()
        if p not in kept:
            kept.add(p)
            todo += children.get(p, [])
    for ancestor in line[1:-1]:     # in a launch's worker, the other workers: the zygote's children
        kept.update(children.get(ancestor, []))    # (the kernel's under start="spawn")
    if sandboxed:
        candidates = set(table)
    else:                           # what this kernel started, and what that started in turn
        candidates, todo = set(), list(children.get(line[0], []))
        while todo:
            p = todo.pop()
            if p not in candidates:
                candidates.add(p)
                todo += children.get(p, [])
    return [f"pid {p}: {_command_line(p)}" for p in sorted(candidates)
            if p not in kept and table[p][1] not in ("Z", "X")]


def _refuse_other_processes(label: str) -> None:
    """Before a check's block: refuse it while another process lives (``other_processes``)."""
    others = other_processes()
    if others:
        raise ReferenceUsedError(
            f"your notebook left another process running ({'; '.join(others[:3])}), which {label} does not allow: "
            "the check watches this process, and another could compute unwatched. Do not start one (end it "
            "before the checks run).")


# --- door 3: the profile hook ---------------------------------------------------------------------

def _watch_keys(original: Any) -> list[int]:
    """What the hook compares calls with for a library routine: its code (a Python function), the
    C function itself (``c_call`` events), or a class's own Python ``__init__``; and the same of
    what it wraps (``__wrapped__``: numpy's functions are dispatchers written in C, whose calls are
    no events, around a Python implementation, whose calls are)."""
    if isinstance(original, type):
        init = original.__dict__.get("__init__")
        code = getattr(init, "__code__", None)
        return [id(code)] if code is not None else []       # a C type's calls are not events
    keys = [id(getattr(original, "__code__", original))]
    wrapped = getattr(original, "__wrapped__", None)
    if callable(wrapped) and wrapped is not original:
        keys += _watch_keys(wrapped)
    return keys


_TORCHSCRIPT = "a TorchScript function (torch.jit)"
_ANOTHER_PROCESS = "another process"


def _refuse(seen: list[str], name: str, label: str) -> NoReturn:
    """Refuse ``name`` for the exercise ``label``, noting it in the guard's ``seen`` when it is the
    first refusal there (a refusal the code catches still counts when the block ends)."""
    if not seen:
        seen.append(name)
    raise ReferenceUsedError(_library_message(name, label))


def _library_message(dotted: str, label: str) -> str:
    if dotted.startswith("a torch."):                   # _made_name: a tensor of a refused dtype
        return (f"your code makes {dotted}, which {label} asks you to do without (a cast to the format, under "
                "any name, is what it is checked against): write the computation yourself.")
    if dotted.startswith(_ANOTHER_PROCESS):
        return (f"your code starts {dotted}, which {label} does not allow: the check watches this process, and "
                "another would run unwatched. Compute the answer here.")
    if dotted == _TORCHSCRIPT:
        return (f"your code calls {dotted}, whose torch routines {label} cannot see (it forbids some): call them "
                "from Python.")
    return f"your code calls {dotted}, which {label} asks you to do without: write the computation yourself."


@contextlib.contextmanager
def guard(*forbidden: Callable | str, label: str = "this exercise") -> Iterator[None]:
    """Forbid package references (functions decorated with ``reference``) and library
    routines (dotted names such as ``"torch.nn.functional.conv2d"``) inside the block; the module
    docstring says how each is caught."""
    refs = [f for f in forbidden if callable(f) and getattr(f, "__gpudl_reference__", False)]
    names = [f for f in forbidden if isinstance(f, str)]
    bad = [f for f in forbidden if not (f in refs or f in names)]
    if bad:
        raise TypeError(f"guard() takes reference functions or dotted names, got {bad!r}")
    seen: list[str] = []
    patched: list[tuple[Any, str, Any]] = []
    watched: dict[int, str] = {}          # id(code object or C function) -> dotted name
    underneath: dict[int, str] = {}       # id(code of a reference's function underneath) -> its name
    refused: dict[Any, str] = {}          # torch's callables for the forbidden torch routines
    for r in refs:
        code = _references.code_of(r)
        if code is not None:
            underneath[id(code)] = f"{r.__module__}.{r.__qualname__}"
    originals = []
    for dotted in names:
        if importlib.util.find_spec(dotted.partition(".")[0]) is None:
            continue                    # a library that is not installed: nothing to call
        owner, attr = _resolve(dotted)
        originals.append((owner, attr, getattr(owner, attr), dotted))
    made: dict[Any, str] = {}             # torch dtypes no torch function may return a tensor of
    if "torch" in sys.modules:
        made = {original: dotted for *_, original, dotted in originals
                if isinstance(original, sys.modules["torch"].dtype)}
        originals = [entry for entry in originals if entry[3] not in made.values()]
    for _owner, _attr, original, dotted in originals:
        if handed_to_modes(original):                   # before any attribute of torch is replaced
            refused.update(torch_names(original))
            refused[original] = dotted
        else:
            watched.update(dict.fromkeys(_watch_keys(original), dotted))
    if refused or made or any(dotted.split(".")[0] == "torch" for *_, dotted in originals):
        # TorchScript runs its graph's operators (torch.autograd.grad's too) from C++, where neither
        # the mode nor the hook sees them: refused wherever something of torch is
        torch_c = sys.modules["torch"]._C
        originals += [(torch_c.ScriptFunction, "__call__", torch_c.ScriptFunction.__call__, _TORCHSCRIPT),
                      (torch_c.ScriptMethod, "__call__", torch_c.ScriptMethod.__call__, _TORCHSCRIPT)]
    wrapper_code = _references.WRAPPER_CODE

    def blocker(dotted: str) -> Callable:
        def blocked(*_a, **_k):
            _refuse(seen, dotted, label)
        return blocked

    def hook(frame, event, arg):
        if event == "c_call":
            hit = watched.get(id(arg))
        elif event == "call":
            key = id(frame.f_code)
            hit = watched.get(key)
            if hit is None and key in underneath:
                caller = frame.f_back
                # Through the wrapper (which checked its caller), or from the package itself: fine.
                if caller is None or not (caller.f_code is wrapper_code or _references.in_package(caller.f_code)):
                    hit = underneath[key]
        else:
            return
        if hit and not seen:
            seen.append(hit)

    hooked = bool(watched or underneath)
    modes = [_refusing_mode(refused, made, label, seen)] if refused or made else []

    def thread_start(frame, event, arg):
        """The first event of a thread started inside the block: the same watch there."""
        sys.setprofile(hook if hooked else None)
        if modes:
            thread_mode = _refusing_mode(refused, made, label, seen)
            modes.append(thread_mode)
            _pop_at_thread_exit(_mode_depth())
            thread_mode.__enter__()      # left on that thread's stack; inactive once the block ends
        if hooked:
            hook(frame, event, arg)

    added = [id(r) for r in refs if id(r) not in _forbidden_now]
    if not _OPEN_GUARDS:
        _refuse_other_processes(label)
    process_patches = _watch_processes()
    open_at = len(_OPEN_GUARDS)
    watching = hooked or bool(modes)
    previous_profile = sys.getprofile()
    previous_thread_profile = threading.getprofile()
    depth = None                          # the mode stack's depth before the guard's mode, once pushed
    try:
        for owner, attr, original, dotted in originals:
            patched.append((owner, attr, original))
            setattr(owner, attr, blocker(dotted))
        for owner, attr, replacement in process_patches:
            patched.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, replacement)
        _OPEN_GUARDS.append((seen, label))
        _forbidden_now.update(added)
        _guard_label.append(label)
        if modes:
            depth = _mode_depth()
            modes[0].__enter__()
        if watching:
            if hooked:
                sys.setprofile(hook)
            threading.setprofile(thread_start)
        yield
    except Exception as exc:
        if not seen or isinstance(exc, ReferenceUsedError):
            raise
        # what the code raised after a refusal it did not see (in a thread, or caught) follows from it
    finally:
        if watching:
            if hooked:
                sys.setprofile(previous_profile)
            threading.setprofile(previous_thread_profile)
        for mode in modes:
            mode.active = False
        if depth is not None:
            _unwind_modes(depth)
        del _OPEN_GUARDS[open_at:]
        _guard_label.pop() if _guard_label else None
        _forbidden_now.difference_update(added)
        for owner, attr, original in reversed(patched):
            setattr(owner, attr, original)
    if seen:
        if seen[0] in underneath.values():
            raise ReferenceUsedError(f"your code calls {seen[0]} (the function underneath the package's reference "
                                     f"for {label}). The exercise is to write it yourself: replace that call with "
                                     "your own code.")
        raise ReferenceUsedError(_library_message(seen[0], label))


__all__ = ["guard", "handed_to_modes", "torch_names", "torch_outputs"]
