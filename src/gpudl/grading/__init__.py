"""What notebook tests call: comparisons that teach, secret-seeded cases, and a guard.

A lab's test cell reads::

    check.peak_flops_from_units(peak_flops_from_units)               # public cases
    ### BEGIN HIDDEN TESTS
    check.peak_flops_from_units(peak_flops_from_units, hidden=True)  # cases from the secret seed
    ### END HIDDEN TESTS

where ``check`` is the lab's module in this package (``gpudl.grading.lab01`` ...). Each check
compares the student's function with the package's reference on cases, through
``check_cases``. The pieces:

``tolerance``      (rtol, atol) by dtype and reduction length, from machine epsilon
``assert_close``   one comparison for scalars and arrays; its messages teach (shapes, NaNs,
                   worst index, first mismatches, "off by a factor of 2", and the known mistake
                   whose output it matches: ``mistakes=``)
``likely_mistake`` which of a check's known mistakes gives the student's wrong output
``GradingError``   what a failed check raises (an AssertionError)
``rng``            a NumPy Generator for hidden cases, seeded from the instructor's secret
                   (``GPUDL_GRADING_SEED``, set per student by ``gpudl grade``)
``reference``      decorator marking a package function as the reference for an exercise
``guard``          while a student's code runs: calling a forbidden reference or library
                   routine, under any of its names, raises ``ReferenceUsedError`` (``forbidden``)
``Case``, ``check_cases``  run a student's function on cases against the reference
``grading_active`` True while nbgrader executes the notebook (autograde or validate)
``quiet``          no warnings, no stderr: a test cell that writes to stderr scores 0
``answer_digest``, ``choice_letters``  fixed answers of questions, compared by hash so the
                   package does not spell them out
``numerical_gradient``  central differences, the oracle for backward passes

A timed figure is judged in ``judging`` (``judge_ratio``: labs 02 and 07).
"""
from __future__ import annotations

import contextvars
import hashlib
import math
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .. import references as _references
from ..hardware import normalize_dtype
from ..references import GradingError, ReferenceUsedError, reference
from .forbidden import guard

SEED_ENV = "GPUDL_GRADING_SEED"
# The checker of `gpudl grade` sets the student's seed here; the student's kernel never has it.
seed_override: contextvars.ContextVar[str | None] = contextvars.ContextVar("gpudl_seed", default=None)
_PUBLIC_SEED = "gpudl-unseeded"   # what hidden cases use when no secret is set (the instructor's own runs)


def grading_active() -> bool:
    """True while nbgrader runs the notebook (it sets NBGRADER_EXECUTION)."""
    return os.environ.get("NBGRADER_EXECUTION", "") in ("autograde", "validate")


# --- tolerances -------------------------------------------------------------------------

# Machine epsilon (2 x unit roundoff) by dtype; the lecture's table of formats gives bf16 7.81e-3,
# half 9.77e-4, single 1.19e-7, double 2.22e-16. TF32 keeps FP16's 10-bit mantissa.
EPS = {"fp64": 2.22e-16, "fp32": 1.19e-7, "tf32": 9.77e-4, "fp16": 9.77e-4, "bf16": 7.81e-3,
       "fp8": 0.125, "int8": 0.0, "int4": 0.0}
_SAFETY = 8.0    # rounding errors of two correct implementations that sum in different orders


def tolerance(dtype: Any = "fp64", k: int = 1) -> tuple[float, float]:
    """(rtol, atol) for results of ``dtype`` that each sum ``k`` products.

    Rounding errors of a length-``k`` reduction grow like ``sqrt(k)`` on average; both
    tolerances are ``8 x eps x sqrt(k)``. ``atol`` applies relative to the expected
    values' typical magnitude (see ``assert_close``), so entries near zero in a matrix
    product are judged against the size of what was summed, not against themselves.
    """
    dt = normalize_dtype(dtype)
    if k < 1:
        raise ValueError(f"reduction length k must be >= 1, got {k}")
    t = _SAFETY * EPS[dt] * math.sqrt(k)
    return t, t


# --- comparison ---------------------------------------------------------------------------

# Ratios actual / expected that point at a common mistake.
_RATIO_HINTS: dict[float, str] = {
    2.0: "a factor of 2: an FMA is 2 FLOPs, or something counted twice?",
    0.5: "a factor of 1/2: a missing factor 2 (an FMA counts 2 FLOPs)?",
    1e3: "a factor of 1e3: a unit prefix (ms vs s, MHz vs GHz, GFLOP/s vs TFLOP/s)?",
    1e-3: "a factor of 1e-3: a unit prefix (ms vs s, MHz vs GHz, GFLOP/s vs TFLOP/s)?",
    1e6: "a factor of 1e6: a unit prefix (MHz vs Hz, us vs s)?",
    1e-6: "a factor of 1e-6: a unit prefix (MHz vs Hz, us vs s)?",
    1e9: "a factor of 1e9: GHz vs Hz, or GB vs bytes?",
    1e-9: "a factor of 1e-9: GHz vs Hz, or GB vs bytes?",
    1e12: "a factor of 1e12: TFLOP/s vs FLOP/s?",
    1e-12: "a factor of 1e-12: TFLOP/s vs FLOP/s?",
    8.0: "a factor of 8: bits vs bytes?",
    0.125: "a factor of 1/8: bits vs bytes?",
    4.0: "a factor of 4: bytes per FP32 element?",
    0.25: "a factor of 1/4: bytes per FP32 element?",
    100.0: "a factor of 100: a percentage instead of a fraction?",
    0.01: "a factor of 1/100: a fraction instead of a percentage?",
    -1.0: "the sign is flipped",
}


# ``hints`` that silence every guess (a ratio's hint of '' is no hint): for a message that names a known mistake.
_NO_GUESS = dict.fromkeys(_RATIO_HINTS, "")


def ratio_hint(actual: float, expected: float, extra: Mapping[float, str] | None = None) -> str:
    """A hint when ``actual / expected`` is one of the ratios of a common mistake, else ''."""
    if expected == 0 or not np.isfinite(actual) or not np.isfinite(expected):
        return ""
    ratio = actual / expected
    for table in (extra or {}, _RATIO_HINTS):
        for r, text in table.items():
            if math.isclose(ratio, r, rel_tol=1e-3):
                return text
    return ""


def _fmt(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return repr(x)


def _shape_hint(actual: tuple, expected: tuple) -> str:
    if len(actual) == len(expected) and sorted(actual) == sorted(expected):
        return "the same sizes in another order: did you swap axes (a transpose or a permute)?"
    if math.prod(actual) == math.prod(expected):
        if tuple(d for d in actual if d != 1) == tuple(d for d in expected if d != 1):
            return "only size-1 dimensions differ: keepdims, squeeze or unsqueeze?"
        return "the same number of elements: a reshape or view in the wrong order?"
    if len(actual) == len(expected) - 1:
        return "one dimension fewer: did you reduce over an axis you should keep (or drop the batch)?"
    if len(actual) == len(expected) + 1:
        return "one dimension more: a missing reduction or an extra batch axis?"
    return ""


def _as_array(x: Any, what: str) -> np.ndarray:
    if x is None:
        raise GradingError(f"{what} is None: did you forget a `return`?")
    if hasattr(x, "detach"):           # torch tensor, on any device
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        x = x.numpy()
    try:
        return np.asarray(x)
    except Exception as exc:  # noqa: BLE001 - anything unconvertible is a student-facing error
        raise GradingError(f"{what} cannot be read as numbers ({type(x).__name__}): {exc}") from exc


def assert_close(actual: Any, expected: Any, *, dtype: Any = None, k: int = 1,
                 rtol: float | None = None, atol: float | None = None, name: str = "result",
                 check_dtype: bool = False, hints: Mapping[float, str] | None = None,
                 mistakes: Mapping[str, Any] | None = None) -> None:
    """Assert that ``actual`` matches ``expected`` to the tolerance of ``dtype`` and ``k``.

    Passes silently; on failure raises ``GradingError`` with a message that names the
    shape or dtype problem, the NaNs, how many values differ, the worst index, the first
    few pairs, and (when all differences share one ratio) the likely mistake.
    ``dtype`` defaults to the expected value's (fp64 for Python numbers).
    Elementwise test: ``|a - e| <= atol * scale + rtol * |e|`` with ``scale`` the
    root-mean-square of ``expected`` (1 when it is all zeros).

    ``mistakes`` maps the text of a known mistake ("did you swap i and f?") to the output that
    mistake gives on this case (or a function of no arguments computing it); when ``actual``
    fails and matches one of them to the same tolerance, the message names it (``likely_mistake``).
    """
    __tracebackhide__ = True
    if not mistakes:
        return _assert_close(actual, expected, dtype=dtype, k=k, rtol=rtol, atol=atol, name=name,
                             check_dtype=check_dtype, hints=hints)
    tol = {"dtype": dtype, "k": k, "rtol": rtol, "atol": atol, "name": name}
    try:
        _assert_close(actual, expected, check_dtype=check_dtype, hints=hints, **tol)
    except GradingError as exc:
        text = likely_mistake(actual, mistakes, _assert_close, **tol)
        if not text:
            raise
        try:                     # the numbers again, without a ratio's guess: the named mistake replaces it
            _assert_close(actual, expected, check_dtype=check_dtype, hints=_NO_GUESS, **tol)
        except GradingError as plain:
            exc = plain
        raise GradingError(named_mistake(str(exc), text)) from None


def _assert_close(actual: Any, expected: Any, *, dtype: Any = None, k: int = 1,
                  rtol: float | None = None, atol: float | None = None, name: str = "result",
                  check_dtype: bool = False, hints: Mapping[float, str] | None = None) -> None:
    __tracebackhide__ = True
    exp = _as_array(expected, "the reference result")
    act = _as_array(actual, f"your {name}")
    if act.dtype == object or exp.dtype == object:
        raise GradingError(f"your {name} is a {type(actual).__name__}, expected numbers of shape {exp.shape}")
    if act.shape != exp.shape:
        if act.size == 1 and exp.size == 1:
            act = act.reshape(exp.shape)
        else:
            hint = _shape_hint(act.shape, exp.shape)
            raise GradingError(f"your {name} has shape {act.shape}, expected {exp.shape}" + (f": {hint}" if hint else ""))
    if check_dtype and act.dtype != exp.dtype:
        raise GradingError(f"your {name} has dtype {act.dtype}, expected {exp.dtype}")
    if dtype is None:
        dtype = exp.dtype if exp.dtype.kind == "f" and exp.dtype.itemsize < 8 else "fp64"
        if exp.dtype.kind in "iub":
            dtype = "int8"   # exact
    default_rtol, default_atol = tolerance(dtype, k)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol

    a = act.astype(np.float64) if act.dtype.kind in "fiub" else act
    e = exp.astype(np.float64)
    bad_nan = np.isnan(a) & ~np.isnan(e)
    if bad_nan.any():
        idx = tuple(int(i) for i in np.argwhere(bad_nan)[0])
        raise GradingError(f"your {name} has {int(bad_nan.sum())} NaN value(s) where the reference has numbers "
                           f"(first at index {idx}): a 0/0, log of a negative, or exp overflowing to inf - inf?")
    bad_inf = np.isinf(a) & ~np.isinf(e)
    if bad_inf.any():
        idx = tuple(int(i) for i in np.argwhere(bad_inf)[0])
        raise GradingError(f"your {name} has {int(bad_inf.sum())} infinite value(s) (first at index {idx}): "
                           "an overflow (exp of a large number?) or a division by zero?")
    finite = np.isfinite(e)
    if finite.any():
        peak = float(np.max(np.abs(e[finite])))          # rms without overflow: scale by the largest first
        scale = peak * float(np.sqrt(np.mean((e[finite] / peak) ** 2))) if peak > 0 else 0.0
    else:
        scale = 1.0
    scale = scale if scale > 0 and np.isfinite(scale) else 1.0
    with np.errstate(invalid="ignore"):
        same = (a == e) | (np.isnan(a) & np.isnan(e))     # matching inf/nan where the reference has them
        err = np.where(finite, np.abs(a - e), np.where(same, 0.0, np.inf))
        limit = atol * scale + rtol * np.abs(np.where(finite, e, 0.0))
    bad = err > limit
    if not bad.any():
        return
    if e.ndim == 0 or e.size == 1:
        av, ev = float(a.reshape(-1)[0]), float(e.reshape(-1)[0])
        hint = ratio_hint(av, ev, hints)
        raise GradingError(f"your {name} is {_fmt(av)}, expected {_fmt(ev)}" + (f": off by {hint}" if hint else ""))
    n_bad = int(bad.sum())
    worst = np.unravel_index(int(np.argmax(np.where(bad, err, -1))), e.shape)
    worst_t = tuple(int(i) for i in worst)
    lines = [f"{n_bad} of {e.size} values of your {name} differ from the reference "
             f"(rtol={rtol:.1e}, atol={atol:.1e} x rms {scale:.3g}); worst at index {worst_t}: "
             f"got {_fmt(a[worst])}, expected {_fmt(e[worst])}"]
    first = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:4]]
    lines.append("first mismatches: " + "; ".join(f"{ix}: got {_fmt(a[ix])}, expected {_fmt(e[ix])}" for ix in first))
    nz = bad & (e != 0)
    if nz.any():
        ratios = a[nz] / e[nz]
        if np.allclose(ratios, ratios[0], rtol=1e-3):
            hint = ratio_hint(float(ratios[0]), 1.0, hints)
            if hint:
                lines.append(f"every mismatch is off by {hint}")
    if e.ndim == 2 and e.shape[0] == e.shape[1] and np.allclose(a, e.T, rtol=rtol, atol=atol * scale):
        lines.append("your result is the transpose of the expected one")
    raise GradingError("\n".join(lines))


# --- known mistakes ----------------------------------------------------------------------

def likely_mistake(actual: Any, mistakes: Mapping[str, Any], compare: Callable[..., None] | None = None,
                   **compare_kwargs: Any) -> str:
    """The first known mistake whose output ``actual`` matches, or ''.

    ``mistakes`` maps the text of a mistake to the output it gives on the case being checked,
    or to a function of no arguments that computes it (called only when needed). The outputs
    come from what the check already knows (the printed or stored expected values rearranged,
    an oracle called with the mistaken arguments), never from an answer. ``actual`` matches
    when ``compare(actual, wrong, **compare_kwargs)`` (``assert_close`` by default) passes: the
    same test, to the same tolerance, that judged it against the right output. A mistake
    whose output cannot be computed or compared on this case is skipped.
    """
    compare = compare or _assert_close
    for text, wrong in mistakes.items():
        try:
            with np.errstate(all="ignore"):
                value = wrong() if callable(wrong) else wrong
            compare(actual, value, **compare_kwargs)
        except Exception:  # noqa: BLE001 - a mistake that does not apply to this case is not the one
            continue
        return text
    return ""


def named_mistake(message: str, text: str) -> str:
    """``message`` with the line that names the known mistake ``text``."""
    return f"{message}\nthat is what a known mistake gives on this case: {text}"


def with_likely_mistake(message: str, actual: Any, mistakes: Mapping[str, Any] | None,
                        compare: Callable[..., None] | None = None, **compare_kwargs: Any) -> str:
    """``message`` with a line naming the known mistake ``actual`` matches (``likely_mistake``), if any."""
    text = likely_mistake(actual, mistakes or {}, compare, **compare_kwargs)
    return named_mistake(message, text) if text else message


def assert_equal(actual: Any, expected: Any, *, name: str = "answer", hint: str = "") -> None:
    """Exact equality for labels, letters and integers, with a teaching message."""
    __tracebackhide__ = True
    if actual is None:
        raise GradingError(f"your {name} is None: did you forget a `return`?")
    if isinstance(expected, str) and isinstance(actual, str):
        if actual.strip().lower() == expected.strip().lower():
            return
    elif actual == expected:
        return
    raise GradingError(f"your {name} is {actual!r}, expected {expected!r}" + (f": {hint}" if hint else ""))


# --- secret-seeded randomness ----------------------------------------------------------

def rng(exercise: str) -> np.random.Generator:
    """A Generator for an exercise's hidden cases, seeded from the instructor's secret.

    ``gpudl grade`` sets ``GPUDL_GRADING_SEED`` per student from a secret the instructor
    keeps, so hidden cases cannot be known (or hard-coded) in advance. Without it (an
    instructor's own run) the cases are still random-looking but reproducible.
    """
    secret = seed_override.get() or os.environ.get(SEED_ENV) or _PUBLIC_SEED
    digest = hashlib.sha256(f"{secret}:{exercise}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


# --- fixed answers -----------------------------------------------------------------------

def answer_digest(lab: str, text: str) -> str:
    """The hash a lab stores instead of a question's answer (``text`` normalised by the lab)."""
    return hashlib.sha256(f"gpudl-{lab}:{text}".encode()).hexdigest()[:32]


def choice_letters(answer: Any, allowed: str = "ABCD") -> str:
    """A multiple-choice answer as its sorted, distinct, upper-case letters ("b, a" -> "AB")."""
    __tracebackhide__ = True
    if not isinstance(answer, str) or not answer.strip():
        raise GradingError("answer with a string of letters, e.g. 'A' or 'AC'")
    letters = "".join(sorted(set(answer.upper().replace(",", "").replace(" ", ""))))
    if set(letters) - set(allowed):
        raise GradingError(f"use only the letters {allowed[0]}-{allowed[-1]}, got {answer!r}")
    return letters


def check_choice(lab: str, answer: Any, allowed: str, digest: str, hint: str, question: str = "") -> None:
    """A multiple-choice answer against its stored digest; a wrong one is told ``hint``.
    ``question`` tells a lab's questions apart in the hash (``"question:LETTERS"``)."""
    __tracebackhide__ = True
    letters = choice_letters(answer, allowed)
    if answer_digest(lab, f"{question}:{letters}" if question else letters) != digest:
        raise GradingError(f"{letters!r} is not it. Hint: {hint}")


# --- gradients -----------------------------------------------------------------------------

def numerical_gradient(loss: Callable[[], float], arrays: Sequence[np.ndarray], eps: float = 1e-6) -> list[np.ndarray]:
    """d loss / d array for each array, by central differences: each element is nudged by
    +-eps in place (and restored) and ``loss()`` re-evaluated. Use float64 arrays."""
    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            old = a[idx]
            a[idx] = old + eps
            plus = loss()
            a[idx] = old - eps
            minus = loss()
            a[idx] = old
            g[idx] = (plus - minus) / (2 * eps)
        grads.append(g)
    return grads


# --- running a student's function on cases ------------------------------------------------

@dataclass(frozen=True)
class Case:
    """Arguments for one call, and how to describe it in a message."""

    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    def describe(self, fn_name: str) -> str:
        if self.label:
            return f"{fn_name} on {self.label}"
        parts = [_short(a) for a in self.args] + [f"{k}={_short(v)}" for k, v in self.kwargs.items()]
        return f"{fn_name}({', '.join(parts)})"


def _short(x: Any) -> str:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"<{type(x).__name__} {tuple(x.shape)} {x.dtype}>"
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def check_cases(student: Callable, reference_fn: Callable, cases: Iterable[Case], *,
                forbid: Sequence[Callable | str] = (), compare: Callable[..., None] | None = None,
                label: str | None = None, mistakes: Callable[..., Mapping[str, Any]] | None = None,
                **compare_kwargs: Any) -> None:
    """For each case: the reference's answer (outside the guard), the student's (inside it),
    and ``compare(actual, expected, **compare_kwargs)`` (``assert_close`` by default).

    ``mistakes(*case.args, **case.kwargs)``, when given, is consulted on a failure: the known
    mistakes of the exercise on this case (``likely_mistake``), the one the student's output
    matches named in the message."""
    __tracebackhide__ = True
    compare = compare or assert_close
    name = getattr(student, "__name__", "your function")
    label = label or f"`{name}`"
    for case in cases:
        with quiet():
            expected = reference_fn(*case.args, **case.kwargs)
        where = case.describe(name)
        actual = call_student(student, *case.args, forbid=forbid, label=label, what=where, **case.kwargs)
        try:
            compare(actual, expected, **compare_kwargs)
        except GradingError as exc:
            text = likely_mistake(actual, _mistakes_of(mistakes, case), compare, **compare_kwargs) if mistakes else ""
            if text and compare in (assert_close, _assert_close):
                try:             # the numbers again, without a ratio's guess: the named mistake replaces it
                    compare(actual, expected, **{**compare_kwargs, "hints": _NO_GUESS})
                except GradingError as plain:
                    exc = plain
            message = f"{where}:\n{exc}"
            raise GradingError(named_mistake(message, text) if text else message) from None


def _mistakes_of(mistakes: Callable[..., Mapping[str, Any]], case: Case) -> Mapping[str, Any]:
    """``mistakes(*case.args, **case.kwargs)``, or none when they cannot be made for this case."""
    try:
        with np.errstate(all="ignore"):
            return dict(mistakes(*case.args, **case.kwargs))
    except Exception:  # noqa: BLE001 - no known mistake applies to this case
        return {}


from .boundary import (AxesSnapshot, Raised, StudentFunction, call_student, draw, exercise, question,  # noqa: E402
                       quiet, run_student, student_side)


# --- how a failed check looks in a notebook ---------------------------------------------------

def _without_package_frames(tb: Any) -> Any:
    """The traceback ``tb`` without the frames of code inside the package."""
    frames = []
    while tb is not None:
        if not _references.in_package(tb.tb_frame.f_code):
            frames.append((tb.tb_frame, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    out = None
    for frame, lasti, lineno in reversed(frames):
        out = types.TracebackType(out, frame, lasti, lineno)
    return out


def _show_teaching_message(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None):
    """IPython's handler for a failed check: the cell's own frames and the teaching message, without
    the frames of the package the check ran in (IPython always shows the frame an exception was
    raised in, even one marked ``__tracebackhide__``)."""
    return shell.showtraceback((etype, value, _without_package_frames(tb)), tb_offset=tb_offset)


def _install_notebook_display() -> None:
    """In an IPython kernel (a student's notebook, nbgrader's autograde and validate), show a
    failed check as its teaching message only."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is not None and not getattr(shell, "custom_exceptions", ()):
        shell.set_custom_exc((GradingError,), _show_teaching_message)


_install_notebook_display()
