"""``Table``: rows of named values with a title and notes, printed as text or Markdown.

What a benchmark returns (``gpudl bench`` prints ``to_text``, ``gpudl run-labs`` puts
``to_markdown`` and ``to_json`` in its report, with the figures beside), and what a notebook
prints a small table with. Public names: ``Table``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    """What a benchmark returns: a title, rows of named values, notes, and optional figures."""

    title: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)   # file stem -> matplotlib Figure

    def columns(self) -> list[str]:
        cols: list[str] = []
        for row in self.rows:
            cols.extend(k for k in row if k not in cols)
        return cols

    @staticmethod
    def _cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)

    def to_markdown(self) -> str:
        cols = self.columns()
        lines = [f"### {self.title}", ""]
        if cols:
            lines.append("| " + " | ".join(cols) + " |")
            lines.append("|" + "---|" * len(cols))
            lines.extend("| " + " | ".join(self._cell(r.get(c)) for c in cols) + " |" for r in self.rows)
        lines.extend(f"\n{n}" for n in self.notes)
        return "\n".join(lines)

    def to_text(self) -> str:
        cols = self.columns()
        cells = [[self._cell(r.get(c)) for c in cols] for r in self.rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
        out = [self.title, "  ".join(c.ljust(w) for c, w in zip(cols, widths)),
               "  ".join("-" * w for w in widths)]
        out.extend("  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells)
        out.extend(self.notes)
        return "\n".join(out)

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "rows": self.rows, "notes": self.notes}
