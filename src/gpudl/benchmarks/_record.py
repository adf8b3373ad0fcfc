"""What ``gpudl bench NAME --record`` keeps: a GPU's rows of a benchmark, for the lectures to show.

A lecture that states a speed shows it from a record, not from memory: ``--record`` writes the
table's rows of a run on a GPU, with the GPU, the date, the command and the versions of torch and
Triton, to ``course/data/bench_NAME.json`` (``path_of``), one entry per GPU model (a later run on
the same model replaces its entry; other models' entries stay). The lecture notebooks read the
records with ``recorded`` and print them with ``recorded_table``; ``tests/figures`` recomputes
every figure the lectures quote from them. A run without a GPU records nothing (its rows are the
CPU's stand-ins) and says so in the table's notes.

``path_of``, ``record``, ``recorded``, ``recorded_table``, ``DATA_DIR``
"""
from __future__ import annotations

import datetime
import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from ..table import Table

# The course's data folder (this module lies in src/gpudl/benchmarks/ of the course repository).
DATA_DIR = Path(__file__).resolve().parents[3] / "course" / "data"
_ENTRY = ("device", "date", "command", "rows")


def path_of(name: str) -> Path:
    """Where ``gpudl bench NAME --record`` keeps its rows by default."""
    return DATA_DIR / f"bench_{name}.json"


def _plain(v: Any) -> Any:
    """A row's value as JSON: numbers (NumPy's too) as numbers, NaN and infinities as None."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f if math.isfinite(f) else None


def record(name: str, table: Table, argv: Sequence[str], path: str | Path | None = None) -> dict[str, Any]:
    """Keep ``table``'s rows of a run on this machine's GPU as its entry in ``path`` (default
    ``path_of(name)``); return the whole record. Refuses a machine without a GPU."""
    import torch

    from .. import hardware

    if not torch.cuda.is_available():
        raise RuntimeError("--record keeps a GPU's measurements, and this machine has no GPU")
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:                 # a GPU machine without Triton still records torch's rows
        triton_version = None
    spec = hardware.detect()
    gpu = spec.name if spec is not None else torch.cuda.get_device_name()
    path = Path(path or path_of(name))
    kept = recorded(name, path)
    kept[gpu] = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
                 "command": " ".join(["gpudl bench", name, *argv]), "torch": torch.__version__,
                 "triton": triton_version, "title": table.title,
                 "rows": [{k: _plain(v) for k, v in row.items()} for row in table.rows],
                 "notes": list(table.notes)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return kept


def recorded(name: str, path: str | Path | None = None) -> dict[str, Any]:
    """The record of benchmark ``name``: {GPU: {device, date, command, torch, triton, title, rows,
    notes}}; empty when nothing was recorded. A file that is not such a record is refused."""
    path = Path(path or path_of(name))
    if not path.is_file():
        return {}
    kept = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(kept, dict) or not all(isinstance(v, dict) and all(k in v for k in _ENTRY)
                                             and isinstance(v["rows"], list) for v in kept.values()):
        raise ValueError(f"{path}: not a record of `gpudl bench {name} --record`")
    return kept


def recorded_table(name: str, gpu: str, *, keep: Callable[[dict[str, Any]], bool] | None = None,
                   columns: Sequence[str] | None = None, path: str | Path | None = None) -> Table:
    """One GPU's recorded rows of ``name`` as a Table titled with the device, date and command
    (``keep``: only the rows it accepts; ``columns``: only those columns, in that order)."""
    kept = recorded(name, path)
    if gpu not in kept:
        raise KeyError(f"nothing recorded for {gpu} in {Path(path or path_of(name)).name} "
                       f"(recorded: {', '.join(kept) or 'none'})")
    entry = kept[gpu]
    rows = [r for r in entry["rows"] if keep is None or keep(r)]
    if columns is not None:
        rows = [{c: r.get(c) for c in columns} for r in rows]
    return Table(f"{gpu} ({entry['device']}), {entry['date']}: `{entry['command']}`", rows=rows)


__all__ = ["DATA_DIR", "path_of", "record", "recorded", "recorded_table"]
