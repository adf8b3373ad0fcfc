"""Expected values of the visible cases, stored with the lab when it is released.

A visible check needs the right answer for its public cases without holding the code that
computes it (that code is the exercise). Where no independent oracle exists (torch, NumPy,
central differences, an invariant, the lecture's printed numbers), the check asks the lab's
store: ``expected("lab06").lstm_cell_forward(x, h, c, W, U, b)`` returns what the instructor's
reference returned for exactly these arguments when ``gpudl release`` ran the visible checks on
the solution (as Stanford CS336 ships its ``.npz`` snapshots). The store answers only the calls
the release saw: other arguments raise ``GradingError``, so it can never stand in for the
answer on a case of the student's choosing (and the hidden cases are never in it).

The same store serves an exercise that builds on an earlier one (the sequence forward calls
the cell forward): ``Replay(entries)`` is a function that answers the recorded calls, put in
the student's namespace in place of their own earlier function for the duration of the check,
so a mistake in one exercise costs that exercise's points only. During grading the checker
sends the entries of the hidden case along with the call (``Store.entries`` is plain data).

The store is a file per lab, ``gpudl/grading/expected/LAB.json.gz``: the recorded calls as the
plain-data codec writes them (``gpudl.grading.wire``), never a pickle. The instructor's
``gpudl release`` writes it (``gpudl_instructor.expected``); a test proves it current.

Public names: ``expected``, ``Store``, ``Replay``, ``Entry``, ``recording``, ``same``, ``STORE_DIR``.
"""
from __future__ import annotations

import base64
import contextlib
import contextvars
import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..references import GradingError
from . import wire

STORE_DIR = Path(__file__).resolve().parent / "expected"
RTOL = 1e-9          # arguments that differ by rounding only (another CPU's libm) still match


@dataclass(frozen=True)
class Entry:
    """One recorded call: the reference's name, its arguments and what it returned."""

    name: str
    args: tuple
    kwargs: Mapping[str, Any]
    result: Any


def same(a: Any, b: Any, rtol: float = RTOL) -> bool:
    """Whether two plain-data values are the same arguments: equal structure, equal integers,
    strings and dtypes, floats equal to ``rtol`` (NaN equals NaN)."""
    if hasattr(a, "detach") and hasattr(b, "detach"):
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            return False
        a, b = a.detach().cpu().float().numpy() if "bfloat16" in str(a.dtype) else a.detach().cpu().numpy(), \
            b.detach().cpu().float().numpy() if "bfloat16" in str(b.dtype) else b.detach().cpu().numpy()
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=rtol, atol=0.0, equal_nan=True))
        return bool(np.array_equal(a, b))
    if type(a) is not type(b):
        if isinstance(a, (int, float, np.integer, np.floating)) and isinstance(b, (int, float, np.integer, np.floating)) \
                and not isinstance(a, bool) and not isinstance(b, bool):
            return float(a) == float(b) or math.isclose(float(a), float(b), rel_tol=rtol)
        return False
    if isinstance(a, float):
        return a == b or math.isclose(a, b, rel_tol=rtol) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, rtol) for x, y in zip(a, b))
    if isinstance(a, Mapping):
        return set(a) == set(b) and all(same(a[k], b[k], rtol) for k in a)
    if hasattr(a, "__dataclass_fields__"):
        return all(same(getattr(a, f), getattr(b, f), rtol) for f in a.__dataclass_fields__)
    return a == b


# --- recording (the instructor's release) ---------------------------------------------------------

_RECORDING: contextvars.ContextVar[tuple[str, Any, list] | None] = contextvars.ContextVar("gpudl_recording",
                                                                                          default=None)


@contextlib.contextmanager
def recording(lab: str, live: Any) -> Iterator[list[Entry]]:
    """While active, ``expected(lab).NAME(...)`` calls ``live.NAME(...)`` (the instructor's
    references) and records the call; yields the list of recorded entries. Only the instructor's
    release and tests use it: the course edition has no ``live`` to pass."""
    entries: list[Entry] = []
    token = _RECORDING.set((lab, live, entries))
    try:
        yield entries
    finally:
        _RECORDING.reset(token)


# --- the store ------------------------------------------------------------------------------------

def _encode_entries(entries: Sequence[Entry]) -> bytes:
    records = [{"name": e.name, "args": tuple(e.args), "kwargs": dict(e.kwargs), "result": e.result}
               for e in entries]
    tree, buffers = wire.encode(records)
    doc = {"format": "gpudl-expected-1", "tree": tree,
           "buffers": [base64.b64encode(b).decode("ascii") for b in buffers]}
    return gzip.compress(json.dumps(doc, sort_keys=True).encode(), mtime=0)


def _decode_entries(data: bytes) -> list[Entry]:
    doc = json.loads(gzip.decompress(data))
    if doc.get("format") != "gpudl-expected-1":
        raise ValueError("not a gpudl store of expected values")
    records = wire.decode(doc["tree"], [base64.b64decode(b) for b in doc["buffers"]])
    return [Entry(r["name"], tuple(r["args"]), dict(r["kwargs"]), r["result"]) for r in records]


def write_store(lab: str, entries: Sequence[Entry], folder: Path = STORE_DIR) -> Path:
    """Write the entries of ``lab`` (deduplicated) to its store file; return the path."""
    unique: list[Entry] = []
    for e in entries:
        if not any(u.name == e.name and same(u.args, e.args, 0.0) and same(u.kwargs, e.kwargs, 0.0) for u in unique):
            unique.append(e)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lab}.json.gz"
    path.write_bytes(_encode_entries(unique))
    return path


def read_store(lab: str, folder: Path = STORE_DIR) -> list[Entry]:
    path = folder / f"{lab}.json.gz"
    if not path.is_file():
        return []
    return _decode_entries(path.read_bytes())


def _describe(args: tuple, kwargs: Mapping[str, Any]) -> str:
    def short(x: Any) -> str:
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return f"<array {tuple(x.shape)} {x.dtype}>"
        text = repr(x)
        return text if len(text) <= 40 else text[:37] + "..."
    return ", ".join([short(a) for a in args] + [f"{k}={short(v)}" for k, v in kwargs.items()])


def lookup(entries: Sequence[Entry], name: str, args: tuple, kwargs: Mapping[str, Any], where: str) -> Any:
    """The recorded result of ``name(*args, **kwargs)``, or ``GradingError``."""
    __tracebackhide__ = True
    try:
        args, kwargs = wire.roundtrip((tuple(args), dict(kwargs)))   # what the store holds: plain data
    except wire.WireError as exc:
        raise GradingError(f"{where}: arguments that are not plain data ({exc})") from None
    for e in entries:
        if e.name == name and same(e.args, args) and same(e.kwargs, kwargs):
            return wire.roundtrip(e.result)          # a fresh copy: the caller may change it
    raise GradingError(f"{where}: no expected value of {name} is stored for ({_describe(args, kwargs)}). "
                       "The stored values cover the visible cases as the lab sets them up: an earlier result of "
                       "yours that differs from the expected one leads here (fix that first), or the lab was "
                       "edited without `gpudl release`.")


class Store:
    """The visible cases' expected values of one lab: ``store.NAME(*args)`` answers a recorded call."""

    def __init__(self, lab: str):
        self.lab = lab
        self._entries: list[Entry] | None = None

    def _all(self) -> list[Entry]:
        if self._entries is None:
            self._entries = read_store(self.lab)
        return self._entries

    def entries(self, name: str) -> list[tuple[tuple, dict, Any]]:
        """The recorded calls of ``name`` as plain data ``[(args, kwargs, result), ...]``, for a
        ``Replay`` in the student's process."""
        rec = _RECORDING.get()
        if rec is not None and rec[0] == self.lab:
            found = [e for e in rec[2] if e.name == name]
        else:
            found = [e for e in self._all() if e.name == name]
        return [(tuple(e.args), dict(e.kwargs), e.result) for e in found]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)

        def answer(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            rec = _RECORDING.get()
            if rec is not None and rec[0] == self.lab:
                lab, live, recorded = rec
                result = getattr(live, name)(*args, **kwargs)
                try:
                    plain_args, plain_kwargs = wire.roundtrip((tuple(args), dict(kwargs)))
                    recorded.append(Entry(name, plain_args, plain_kwargs, wire.roundtrip(result)))
                except wire.WireError as exc:
                    raise TypeError(f"{lab}: the call {name}({_describe(args, kwargs)}) cannot be stored: {exc}") \
                        from None
                return result
            return lookup(self._all(), name, args, kwargs, f"the visible case of {self.lab}")

        answer.__name__ = name
        return answer

    def __repr__(self) -> str:
        return f"<expected values of {self.lab}'s visible cases>"


_STORES: dict[str, Store] = {}


def expected(lab: str) -> Store:
    """The store of ``lab`` ("lab06")."""
    if lab not in _STORES:
        _STORES[lab] = Store(lab)
    return _STORES[lab]


class Replay:
    """A function that answers the recorded calls ``[(args, kwargs, result), ...]`` and nothing
    else: what stands in the student's namespace for an earlier exercise while a later one is
    checked."""

    def __init__(self, name: str, calls: Sequence[Sequence[Any]]):
        self.__name__ = name
        self._entries = [Entry(name, tuple(a), dict(k), r) for a, k, r in calls]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        return lookup(self._entries, self.__name__, args, kwargs,
                      f"the expected {self.__name__} put in place of yours for this check")

    def __repr__(self) -> str:
        return f"<the expected {self.__name__} for this check's case>"
