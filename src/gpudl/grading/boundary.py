"""The boundary between a check and the student's code.

A *check* is what a test cell calls: ``check.NAME(student_function, hidden=...)``. It draws
cases, computes the reference's answers, calls the student's function and compares. During
``gpudl grade`` the check runs in the grader's *checker*, a process the student's code never
runs in, and the student's function stays in the student's kernel: each call crosses the
boundary as plain data (``gpudl.grading.wire``) and its result comes back as plain data.
Anywhere else (a student's own JupyterLab, ``nbgrader validate``, the tests) the check runs in
the notebook's process, but every call still crosses the same codec, so a check behaves the
same in both places and a check written against the rules here works under the grader.

The rules for a lab's checks:

- decorate every function a test cell calls with ``@exercise``;
- call the student's code only through ``call_student(fn, *args)`` (plain-data arguments,
  a plain-data result) or, when the call needs objects of the student's process (a
  matplotlib ``Axes`` to draw on, work to time, a Triton kernel to launch, a tensor the
  kernel writes into), through ``run_student(adapter, fn, *args)``, where ``adapter`` is a
  module-level function marked ``@student_side`` that runs in the student's process and
  returns plain data;
- draw the cases inside the check (``rng`` gives the hidden ones), so the student's process
  never holds the secret seed;
- put every measurement of time (the student's timer, the package's timer beside it) inside
  ``with timed("gpu")`` or ``with timed("host")``, so students graded side by side never
  disturb it (the check's name must also be in ``gpudl_instructor.gpulease.TIMED_CHECKS``).

Public names: ``exercise``, ``student_side``, ``StudentFunction``, ``call_student``,
``run_student``, ``Raised``, ``draw``, ``AxesSnapshot``, ``timed``.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import io
import os
import socket
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from ..references import GradingError, ReferenceUsedError
from . import wire

_CHECKS: dict[str, Callable] = {}
_ADAPTERS: dict[str, Callable] = {}


def _qualname(fn: Callable) -> str:
    return f"{fn.__module__}:{fn.__qualname__}"


# --- what crosses: a call, and what became of it --------------------------------------------

@dataclass(frozen=True)
class Raised:
    """The student's code raised an exception ``call_student`` was told to allow."""

    type: str
    message: str
    mro: tuple[str, ...] = ()

    def isa(self, *types: type) -> bool:
        return any(t.__name__ in self.mro or t.__name__ == self.type for t in types)


@dataclass(frozen=True)
class Outcome:
    """What one call of student code came to: a value, or an exception it raised, or a result
    that could not cross (``refused``: the reason)."""

    value: Any = None
    raised: Raised | None = None
    refused: str = ""


def _raised(exc: BaseException) -> Raised:
    mro = tuple(c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins" or c in
                (GradingError, ReferenceUsedError))
    text = str(exc)
    return Raised(type(exc).__name__, text[:2000] + (" ..." if len(text) > 2000 else ""), mro)


@contextlib.contextmanager
def quiet() -> Iterator[io.StringIO]:
    """Swallow warnings and anything written to stdout/stderr (returned as one buffer)."""
    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stderr(buf), contextlib.redirect_stdout(buf):
            yield buf


def _resolve_forbidden(forbid: Sequence[Any]) -> list[Any]:
    """References arrive as their qualified names ("gpudl.roofline:conv2d_flops"), library
    routines as dotted names ("torch.nn.functional.conv2d")."""
    out = []
    for item in forbid:
        if isinstance(item, str) and ":" in item:
            module, _, qual = item.partition(":")
            try:
                obj: Any = importlib.import_module(module)
            except ImportError:
                continue        # a reference this process cannot reach (the instructor's part): nothing to guard
            for part in qual.split("."):
                obj = getattr(obj, part)
            out.append(obj)
        else:
            out.append(item)
    return out


def forbid_names(forbid: Sequence[Any]) -> list[str]:
    """The guard's list as plain names: references by qualified name, library routines as given."""
    names = []
    for item in forbid:
        if isinstance(item, str):
            names.append(item)
        elif callable(item) and getattr(item, "__gpudl_reference__", False):
            names.append(_qualname(item))
        else:
            raise TypeError(f"forbid takes reference functions or dotted names, got {item!r}")
    return names


def execute(fn: Callable, adapter: str | None, args: tuple, kwargs: dict, forbid: Sequence[str],
            label: str) -> Outcome:
    """Run one call of student code in this process, quietly, under the guard: ``fn(*args)``,
    or ``adapter(fn, *args)``. Interrupts (the cell's time limit) are not caught."""
    from . import guard

    target = fn
    if adapter is not None:
        impl = _ADAPTERS.get(adapter)
        if impl is None:
            module = adapter.partition(":")[0]
            if module.split(".")[0] == "gpudl":
                importlib.import_module(module)
            impl = _ADAPTERS.get(adapter)
        if impl is None:
            return Outcome(refused=f"unknown student-side function {adapter}")
        target = functools.partial(impl, fn)
    try:
        with quiet(), guard(*_resolve_forbidden(forbid), label=label):
            value = target(*args, **kwargs)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever student code raises is reported
        return Outcome(raised=_raised(exc))
    return Outcome(value=value)


# --- sessions: where calls of student code run ------------------------------------------------

class Session:
    """Runs calls of student code for checks. ``LocalSession``: in this process, through the
    codec. The checker's session (``gpudl_instructor.checker``) sends them to the kernel."""

    def call(self, handle: Any, adapter: str | None, args: tuple, kwargs: dict, forbid: Sequence[str],
             label: str) -> Outcome:
        raise NotImplementedError


class LocalSession(Session):
    """Student code in this process; arguments and results pass through the codec both ways,
    exactly as they would cross to and from a student's kernel."""

    def call(self, handle, adapter, args, kwargs, forbid, label):
        try:
            args, kwargs = wire.roundtrip((tuple(args), dict(kwargs)), **_handles_codec())
        except wire.WireError as exc:
            raise TypeError(f"a check passed an argument that is not plain data: {exc}") from None
        outcome = execute(handle, adapter, args, kwargs, forbid, label)
        if outcome.raised or outcome.refused:
            return outcome
        try:
            return Outcome(value=wire.roundtrip(outcome.value))
        except wire.WireError as exc:
            return Outcome(refused=str(exc))


_LOCAL = LocalSession()


def _handles_codec() -> dict[str, Any]:
    """Encode a StudentFunction passed as an argument (one student function handed to another)
    as a handle, and decode it back to the function, as the checker's session does."""
    table: list[Any] = []

    def enc(x: Any) -> Any:
        if isinstance(x, StudentFunction):
            table.append(x.handle)
            return {"__fn__": len(table) - 1}
        raise wire.WireError(wire._describe(x))

    def dec(key: str, node: dict) -> Any:
        if key == "__fn__" and type(node[key]) is int and 0 <= node[key] < len(table):
            return table[node[key]]
        raise wire.WireError(f"an unknown tag {key!r}")

    return {"extra": enc, "extra_decode": dec}


class StudentFunction:
    """The student's function as a check holds it: ``call_student(fn, ...)`` calls it through
    the session it belongs to. Calling it directly works too (no guard, no teaching message)."""

    def __init__(self, handle: Any, name: str, session: Session | None = None):
        self.handle = handle
        self.__name__ = name
        self.session = session

    def call(self, adapter: str | None, args: tuple, kwargs: dict, forbid: Sequence[str], label: str) -> Outcome:
        return (self.session or _LOCAL).call(self.handle, adapter, args, kwargs, forbid, label)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_student(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<student function {self.__name__}>"


def as_student(fn: Any, what: str = "your function") -> StudentFunction:
    __tracebackhide__ = True
    if isinstance(fn, StudentFunction):
        return fn
    if not callable(fn) or isinstance(fn, type):
        raise GradingError(f"expected a function, got {type(fn).__name__}: did you overwrite its name?")
    return StudentFunction(fn, getattr(fn, "__name__", what))


def _outcome_value(outcome: Outcome, what: str, allow: Sequence[type]) -> Any:
    __tracebackhide__ = True
    if outcome.refused:
        raise GradingError(f"{what} returned {outcome.refused}: return numbers, strings, lists, tuples, dicts, "
                           "NumPy arrays or tensors")
    r = outcome.raised
    if r is None:
        return outcome.value
    if r.type == "ReferenceUsedError":
        raise ReferenceUsedError(r.message)
    if allow and r.isa(*allow):
        return r
    if r.type == "NotImplementedError":
        raise GradingError(f"{what} is not implemented yet (it raised NotImplementedError)")
    if r.type == "GradingError":
        raise GradingError(r.message)
    raise GradingError(f"{what} raised {r.type}: {r.message}")


def call_student(fn: Any, *args: Any, forbid: Sequence[Callable | str] = (), label: str = "this exercise",
                 what: str | None = None, allow: Sequence[type] = (), **kwargs: Any) -> Any:
    """Call a student's function with plain-data arguments, quietly, under the guard (calling
    anything in ``forbid`` raises ``ReferenceUsedError``); return its plain-data result.

    An exception the student's code raises becomes a ``GradingError`` that says so, except
    types in ``allow``, which come back as a ``Raised`` value for the check to judge."""
    __tracebackhide__ = True
    fn = as_student(fn)
    what = what or fn.__name__
    outcome = fn.call(None, args, kwargs, forbid_names(forbid), label)
    return _outcome_value(outcome, what, allow)


def student_side(fn: Callable) -> Callable:
    """Mark a module-level function of the package as one that runs in the student's process:
    ``run_student(fn, student_fn, *args)`` calls ``fn(student_fn, *args)`` there, with plain-data
    arguments, and returns its plain-data result."""
    _ADAPTERS[_qualname(fn)] = fn
    fn.__gpudl_student_side__ = _qualname(fn)
    return fn


def run_student(adapter: Callable, fn: Any, *args: Any, forbid: Sequence[Callable | str] = (),
                label: str = "this exercise", what: str | None = None, allow: Sequence[type] = (),
                **kwargs: Any) -> Any:
    """``adapter(student_fn, *args, **kwargs)`` in the student's process (``adapter`` is marked
    ``@student_side``); errors and the guard as in ``call_student``."""
    __tracebackhide__ = True
    name = getattr(adapter, "__gpudl_student_side__", None)
    if name is None:
        raise TypeError(f"{adapter!r} is not marked @student_side")
    fn = as_student(fn)
    what = what or fn.__name__
    outcome = fn.call(name, args, kwargs, forbid_names(forbid), label)
    return _outcome_value(outcome, what, allow)


# --- measurements ------------------------------------------------------------------------------

# Where students share a device while they are graded, the checker sets this (in its own process,
# out of the student's reach): ``TIMED_SECTION(what)`` is a context that holds the device alone for
# a measurement of ``what``. Elsewhere nothing is shared, and a section holds nothing.
TIMED_SECTION: Callable[[str], Any] | None = None
TIMED_KINDS = ("gpu", "host")


def timed(what: str) -> Any:
    """The section of a check that measures: ``with timed("gpu"):`` around timing work on the GPU,
    ``with timed("host"):`` around wall-clock timing of host work (sleeps, Python, a simulated
    GPU). Where students share a device, the grader gives the section that device alone (the GPU's
    lease for "gpu"; the CPU's for "host" where the CPU is what they share); the rest of the check
    shares. The lease is the checker's, so the student's code can neither skip nor hold it."""
    if what not in TIMED_KINDS:
        raise ValueError(f"timed() takes one of {TIMED_KINDS}, got {what!r}")
    return TIMED_SECTION(what) if TIMED_SECTION is not None else contextlib.nullcontext()


# --- checks ------------------------------------------------------------------------------------

# The instructor's checks of the hidden cases, found by the course check's name. The course
# edition never imports them: the instructor's processes (the checker, the tests, the release)
# install a finder here. Without one (a student's own kernel), a hidden call says where it runs.
HIDDEN_FINDER: Callable[[str], Callable | None] | None = None
HIDDEN_ELSEWHERE = ("the hidden cases of this check are drawn and judged by the grader when your notebook is "
                    "graded; here only the visible cases run")


def resolve(name: str, hidden: bool) -> tuple[Callable, dict[str, Any]]:
    """The function that runs check ``name`` on the visible or the hidden cases, and the keyword
    arguments to add: the instructor's hidden check where one is installed; else the course check
    (a lab whose checks still draw their own hidden cases takes ``hidden=``)."""
    check = registered_check(name)
    if hidden:
        found = HIDDEN_FINDER(name) if HIDDEN_FINDER is not None else None
        if found is not None:
            return found, {}
        if not getattr(check, "__gpudl_takes_hidden__", False):
            raise GradingError(HIDDEN_ELSEWHERE)
        return check, {"hidden": True}
    return check, ({"hidden": False} if getattr(check, "__gpudl_takes_hidden__", False) else {})


def question(check: Callable) -> Callable:
    """Mark a check (under ``@exercise``) as a question's: its visible part says only whether the
    answer is well-formed (a letter of the offered set, a number); the verdict comes from the hidden
    check when the notebook is graded, so trial and error in the notebook learns nothing."""
    check.__gpudl_question__ = True
    return check


def exercise(check: Callable) -> Callable:
    """Mark a check that a test cell calls: ``check(fn)`` runs the visible cases,
    ``check(fn, hidden=True)`` the hidden ones. During ``gpudl grade`` the call goes to the checker
    (the student's functions stay in the kernel as handles); otherwise the check runs here with
    the student's functions wrapped as ``StudentFunction`` and plain values through the codec."""
    import inspect

    name = _qualname(check)
    _CHECKS[name] = check
    check.__gpudl_takes_hidden__ = "hidden" in inspect.signature(check).parameters

    @functools.wraps(check)
    def run(*args: Any, hidden: bool = False, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if remote_enabled():
            return run_remote(name, args, {**kwargs, "hidden": bool(hidden)})
        local_args = tuple(_local_arg(a) for a in args)
        local_kwargs = {k: _local_arg(v) for k, v in kwargs.items()}
        try:
            target, extra = resolve(name, bool(hidden))
            result = target(*local_args, **local_kwargs, **extra)
        except GradingError as exc:
            # Only the teaching message: no frames of the grader, no chain of exceptions.
            raise type(exc)(str(exc)) from None
        passed(bool(hidden))
        return result

    run.__gpudl_check__ = name
    del run.__wrapped__         # the check itself is reached through its name, not the wrapper
    return run


PASSED = "visible cases passed; hidden cases run when graded"


def passed(hidden: bool) -> None:
    """One short line on stdout after a visible check passes, so a student can tell a passing
    test cell from one that did not run."""
    if not hidden:
        print(PASSED)


def _local_arg(value: Any) -> Any:
    __tracebackhide__ = True
    if isinstance(value, StudentFunction):
        return value
    if callable(value) and not isinstance(value, type):
        return StudentFunction(value, getattr(value, "__name__", "your function"))
    try:
        return wire.roundtrip(value)
    except wire.WireError as exc:
        raise GradingError(f"your answer is {exc}: answer with numbers, strings, lists, tuples, dicts or arrays")


def registered_check(name: str) -> Callable:
    """The check ``name`` ("gpudl.grading.lab01:bound"), importing its module when needed."""
    if name not in _CHECKS:
        module = name.partition(":")[0]
        if module.split(".")[:2] != ["gpudl", "grading"]:
            raise KeyError(f"not a check: {name}")
        importlib.import_module(module)
    return _CHECKS[name]


# --- the kernel's side of the checker (gpudl_instructor.checker is the other side) -----------

CHECKER_ENV = "GPUDL_CHECKER"


def remote_enabled() -> bool:
    """True in a student's kernel under ``gpudl grade``: checks go to the checker."""
    return bool(os.environ.get(CHECKER_ENV))




# How many of the checker's calls of student code this kernel is serving: a check called from one (a
# student who hands a check the check itself, ``bound = check.bound``) would wait for a checker that is
# busy waiting on this kernel, until the cell's time limit.
_SERVING = [0]


def run_remote(name: str, args: tuple, kwargs: dict[str, Any]) -> Any:
    """Run check ``name`` in the checker, serving its calls of the student's functions here."""
    __tracebackhide__ = True
    if _SERVING[0]:
        raise GradingError(f"your function called a check ({name.rpartition(':')[2]}) while a check was calling "
                           "it: an answer must compute its result, not ask a check") from None
    handles: list[Any] = []

    def enc_fn(x: Any) -> Any:
        if callable(x) and not isinstance(x, type):
            handles.append(x)
            return {"__fn__": len(handles) - 1, "name": str(getattr(x, "__name__", "your function"))[:80]}
        raise wire.WireError(wire._describe(x))

    def dec_fn(key: str, node: dict) -> Any:
        if key == "__fn__" and type(node[key]) is int and 0 <= node[key] < len(handles):
            return handles[node[key]]
        raise wire.WireError(f"an unknown tag {key!r}")

    try:
        tree, buffers = wire.encode({"args": tuple(args), "kwargs": dict(kwargs)}, extra=enc_fn)
    except wire.WireError as exc:
        raise GradingError(f"your answer is {exc}: answer with numbers, strings, lists, tuples, dicts or arrays") \
            from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(os.environ[CHECKER_ENV])
    except OSError as exc:
        raise GradingError(f"the grader's checker cannot be reached ({exc})") from None
    with sock:
        wire.send(sock, {"op": "check", "check": name, "call": tree}, buffers)
        while True:
            msg, bufs = wire.recv(sock)
            op = msg.get("op")
            if op == "done":
                if msg.get("passed"):
                    passed(bool(kwargs.get("hidden", False)))
                    return None
                raise GradingError(str(msg.get("message", "the check failed"))) from None
            if op != "call":
                raise GradingError(f"the checker sent an unknown message {op!r}") from None
            _serve_call(sock, msg, bufs, handles, dec_fn)


def _serve_call(sock: socket.socket, msg: dict, bufs: list[bytes], handles: list[Any], dec_fn: Any) -> None:
    """Run one call the checker asked for and send back what came of it."""
    try:
        fn = handles[int(msg["fn"])]
        args, kwargs = wire.decode(msg["call"], bufs, extra=dec_fn)
        _SERVING[0] += 1
        try:
            outcome = execute(fn, msg.get("adapter"), tuple(args), dict(kwargs), list(msg.get("forbid", ())),
                              str(msg.get("label", "this exercise")))
        finally:
            _SERVING[0] -= 1
    except KeyboardInterrupt:
        wire.send(sock, {"op": "interrupted"})
        raise
    except (wire.WireError, IndexError, KeyError, TypeError, ValueError) as exc:
        wire.send(sock, {"op": "refused", "reason": f"a call the kernel could not read ({exc})"})
        return
    if outcome.refused:
        wire.send(sock, {"op": "refused", "reason": outcome.refused})
    elif outcome.raised is not None:
        r = outcome.raised
        wire.send(sock, {"op": "raised", "type": r.type, "message": r.message, "mro": list(r.mro)})
    else:
        try:
            tree, buffers = wire.encode(outcome.value)
        except (wire.WireError, RecursionError) as exc:
            wire.send(sock, {"op": "refused", "reason": str(exc)})
            return
        wire.send(sock, {"op": "result", "value": tree}, buffers)



# --- plots: what the student drew, as data --------------------------------------------------------

class _Artist:
    def __init__(self, data: dict[str, Any]):
        self._d = data


class _Line(_Artist):
    def get_data(self):
        return self._d["x"], self._d["y"]

    def get_xdata(self):
        return self._d["x"]

    def get_ydata(self):
        return self._d["y"]

    def get_label(self) -> str:
        return self._d["label"]

    def get_marker(self) -> str:
        return self._d["marker"]

    def get_linestyle(self) -> str:
        return self._d["linestyle"]

    def get_color(self) -> str:
        return self._d["color"]


class _Collection(_Artist):
    def get_offsets(self):
        return self._d["offsets"]

    def get_label(self) -> str:
        return self._d["label"]


class _Text(_Artist):
    def get_text(self) -> str:
        return self._d["text"]

    def get_position(self):
        return tuple(self._d["position"])


class AxesSnapshot:
    """A matplotlib ``Axes`` as the student left it, in the accessors checks use: scales,
    labels, title, limits, ``lines``, ``collections``, ``texts``, ``patches`` (as rectangles
    (x, y, width, height)), the legend's labels, and the figure's other axes' count."""

    def __init__(self, data: dict[str, Any]):
        self._d = data
        self.lines = [_Line(d) for d in data["lines"]]
        self.collections = [_Collection(d) for d in data["collections"]]
        self.texts = [_Text(d) for d in data["texts"]]
        self.patches = [tuple(p) for p in data["patches"]]

    def get_xscale(self) -> str:
        return self._d["xscale"]

    def get_yscale(self) -> str:
        return self._d["yscale"]

    def get_xlabel(self) -> str:
        return self._d["xlabel"]

    def get_ylabel(self) -> str:
        return self._d["ylabel"]

    def get_title(self) -> str:
        return self._d["title"]

    def get_xlim(self):
        return tuple(self._d["xlim"])

    def get_ylim(self):
        return tuple(self._d["ylim"])

    def legend_labels(self) -> list[str]:
        return list(self._d["legend"])

    @property
    def figure_axes(self) -> int:
        return int(self._d["figure_axes"])


def _snapshot(ax: Any) -> dict[str, Any]:
    import numpy as np

    def arr(v: Any) -> Any:
        a = np.asarray(v)
        if a.dtype.kind in "biuf":
            return a.astype(float)
        try:
            return a.astype(float)
        except (TypeError, ValueError):
            return np.zeros(0)

    legend = ax.get_legend()
    return {
        "xscale": str(ax.get_xscale()), "yscale": str(ax.get_yscale()),
        "xlabel": str(ax.get_xlabel()), "ylabel": str(ax.get_ylabel()), "title": str(ax.get_title()),
        "xlim": [float(v) for v in ax.get_xlim()], "ylim": [float(v) for v in ax.get_ylim()],
        "lines": [{"x": arr(ln.get_xdata()), "y": arr(ln.get_ydata()), "label": str(ln.get_label()),
                   "marker": str(ln.get_marker()), "linestyle": str(ln.get_linestyle()),
                   "color": str(ln.get_color())} for ln in ax.lines],
        "collections": [{"offsets": arr(c.get_offsets()), "label": str(c.get_label())} for c in ax.collections],
        "texts": [{"text": str(t.get_text()), "position": [float(v) for v in t.get_position()]} for t in ax.texts],
        "patches": [[float(p.get_x()), float(p.get_y()), float(p.get_width()), float(p.get_height())]
                    for p in ax.patches if hasattr(p, "get_width")],
        "legend": [str(t.get_text()) for t in legend.get_texts()] if legend is not None else [],
        "figure_axes": len(ax.figure.axes),
    }


@student_side
def _draw_on_new_axes(fn: Callable, *args: Any, **kwargs: Any) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        fn(ax, *args, **kwargs)
        return _snapshot(ax)
    finally:
        plt.close(fig)


def draw(fn: Any, *args: Any, forbid: Sequence[Callable | str] = (), label: str = "this plot",
         what: str | None = None, **kwargs: Any) -> AxesSnapshot:
    """Give the student's ``fn(ax, *args, **kwargs)`` a fresh ``Axes`` in their process and
    return what it drew as an ``AxesSnapshot``."""
    __tracebackhide__ = True
    data = run_student(_draw_on_new_axes, fn, *args, forbid=forbid, label=label, what=what, **kwargs)
    if not isinstance(data, dict) or "lines" not in data:
        raise GradingError(f"{what or 'your plotting function'} did not leave a readable plot")
    return AxesSnapshot(data)


__all__ = ["timed", "TIMED_KINDS", "remote_enabled", "run_remote", "CHECKER_ENV", "exercise", "student_side", "StudentFunction", "call_student", "run_student", "Raised", "draw",
           "AxesSnapshot", "Session", "LocalSession", "Outcome", "execute", "quiet", "as_student"]
