"""Similarity between submissions: ``gpudl similar OUT [--reference DIR ...] [--threshold T]``.

Compares the code the students wrote (the solution cells of their graded notebooks in
``OUT/autograded``) pair by pair with copydetect (MIT; the winnowing fingerprints of MOSS, on
Pygments tokens with names replaced by placeholders and comments and whitespace dropped), so
renamed variables, reordered functions and changed comments do not hide a copy. What every
student was given is boilerplate and never counts: the released notebook's cells and the code
the lab's text shows (a one-line formula the lab gives). A student who left an exercise blank has
nothing of their own in it, so two blank submissions share nothing.

Past terms' submissions join with ``--reference DIR`` (folders of notebooks, or earlier grading
outputs): each student is compared with them too, references not with each other.

The pairs are found by their shared fingerprints first; the ``DETAILED`` most similar are then
compared token by token (copydetect's shares and fragments), so a class of 300 takes seconds.

Writes ``OUT/similar.json`` (the pairs above the threshold, most similar first, with the matched
fragments of the detailed ones) and ``OUT/similar.html`` (each pair's fragments side by side), which ``gpudl report``
summarizes. A pair is a lead to read, never a verdict.

Public names: ``Pair``, ``similar``, ``answer_code``, ``THRESHOLD``, ``NOISE_TOKENS``.
"""
from __future__ import annotations

import html
import io
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import nbformat

THRESHOLD = 0.5          # the share of one submission's own code found in the other's
NOISE_TOKENS = 25        # shorter common runs of tokens are coincidence (copydetect's noise threshold)
GUARANTEE_TOKENS = 30    # runs at least this long are always found (the winnowing window follows)
DETAILED = 200           # pairs compared token by token (fragments, exact shares); the rest by fingerprints


@dataclass
class Pair:
    a: str
    b: str
    similarity: float                 # the larger of the two shares
    similarity_a: float               # share of a's code found in b
    similarity_b: float
    tokens: int                       # matched tokens
    fragments: list[tuple[str, str]] = field(default_factory=list)


def _solution_ids(released: nbformat.NotebookNode) -> list[str]:
    return [c.metadata["nbgrader"]["grade_id"] for c in released.cells
            if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution")]


def answer_code(nb: nbformat.NotebookNode, solution_ids: Sequence[str] = ()) -> str:
    """The student's own code: the solution cells (or, for a notebook without nbgrader metadata,
    every code cell), one after another."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    if solution_ids:
        by_id = {c.get("metadata", {}).get("nbgrader", {}).get("grade_id"): c for c in cells}
        cells = [by_id[i] for i in solution_ids if i in by_id]
    return "\n\n".join(c.source for c in cells)


def _boilerplate(released: nbformat.NotebookNode, solution_ids: Sequence[str]) -> str:
    """What every student got: the released solution cells as a blank submission has them, every
    released cell, and the code the lab's text shows."""
    code = [answer_code(released, solution_ids)] + [c.source for c in released.cells if c.cell_type == "code"]
    for c in released.cells:
        if c.cell_type == "markdown":
            code += re.findall(r"```(?:python)?\n(.*?)```", c.source, re.S)
            code += [m for m in re.findall(r"`([^`\n]{8,})`", c.source)]
    return "\n\n".join(code)


def _read(path: Path) -> nbformat.NotebookNode | None:
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable notebook has no code to compare
        return None


def _students(out: Path, lab: str) -> dict[str, Path]:
    return {p.parent.parent.name: p for p in sorted((out / "autograded").glob(f"*/{lab}/{lab}.ipynb"))}


def _references(dirs: Sequence[Path], lab: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in dirs:
        d = Path(d)
        if not d.exists():
            raise FileNotFoundError(f"--reference {d} does not exist")
        for p in sorted(d.rglob("*.ipynb")):
            if ".ipynb_checkpoints" in p.parts:
                continue
            rel = p.relative_to(d)
            found[f"ref:{d.name}/{rel.parent.as_posix() if rel.parent.parts else rel.stem}"] = p
    return found


def _fragments(code: str, slices: Any, limit: int = 6) -> list[str]:
    out = []
    for start, end in list(zip(slices[0], slices[1]))[:limit]:
        out.append(code[int(start):int(end)])
    return out


def similar(out: str | Path, *, lab: str | None = None, references: Sequence[str | Path] = (),
            threshold: float = THRESHOLD, root: str | Path | None = None) -> list[Pair]:
    """The pairs of students of the grading output ``out`` (and references) whose own code is
    similar above ``threshold``; writes similar.json and similar.html into ``out``."""
    from copydetect import CodeFingerprint, compare_files
    from copydetect.utils import get_token_coverage

    from .course import repo_root

    out = Path(out)
    status = out / "grading-status.json"
    if not status.is_file():
        raise FileNotFoundError(f"{out} is not a grading output: run gpudl grade LAB SUBMISSIONS --out {out} first")
    labs = sorted(json.loads(status.read_text()))
    lab = lab or (labs[0] if len(labs) == 1 else None)
    if lab is None:
        raise ValueError(f"{out} holds several labs ({', '.join(labs)}): name one with --lab")
    root = repo_root(root)
    released = nbformat.read(str(root / "labs" / lab / f"{lab}.ipynb"), as_version=4)
    ids = _solution_ids(released)
    window = GUARANTEE_TOKENS - NOISE_TOKENS + 1
    given = CodeFingerprint("boilerplate.py", NOISE_TOKENS, 1, fp=io.StringIO(_boilerplate(released, ids)),
                            language="python").hashes          # every k-gram of it (window 1), not a sample

    def fingerprint(name: str, path: Path) -> Any:
        nb = _read(path)
        code = answer_code(nb, ids) if nb is not None else ""
        fp = CodeFingerprint(f"{name}.py", NOISE_TOKENS, window, fp=io.StringIO(code), language="python")
        fp.hashes = fp.hashes - given                 # what every student was given never counts
        fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in given}
        fp.token_coverage = get_token_coverage(fp.hash_idx, NOISE_TOKENS, len(fp.filtered_code))
        return fp

    students = {s: fingerprint(s, p) for s, p in _students(out, lab).items()}
    refs = {r: fingerprint(r, p) for r, p in _references([Path(d) for d in references], lab).items()}
    names = sorted(students)
    pairs: list[Pair] = []
    todo = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]] + [(a, r) for a in names for r in refs]
    prints = {**students, **refs}
    # First every pair by its shared fingerprints (set arithmetic: 45,000 pairs of a class of 300 in a
    # second or two), then the most similar DETAILED of them token by token, with their fragments.
    candidates = []
    for a, b in todo:
        fa, fb = prints[a], prints[b]
        shared = len(fa.hashes & fb.hashes)
        if shared:
            share = shared / max(1, min(len(fa.hashes), len(fb.hashes)))
            if share >= 0.75 * threshold:
                candidates.append((share, shared, a, b))
    candidates.sort(key=lambda c: (-c[0], -c[1], c[2], c[3]))
    for rank, (share, shared, a, b) in enumerate(candidates):
        fa, fb = prints[a], prints[b]
        if rank < DETAILED:
            tokens, (sa, sb), (slices_a, slices_b) = compare_files(fa, fb)
            fragments = list(zip(_fragments(fa.raw_code, slices_a), _fragments(fb.raw_code, slices_b)))
        else:                   # past the detailed ones: the share of fingerprints stands for the share of tokens
            tokens, fragments = shared * NOISE_TOKENS, []
            sa, sb = shared / max(1, len(fa.hashes)), shared / max(1, len(fb.hashes))
        if max(sa, sb) >= threshold:
            pairs.append(Pair(a, b, float(max(sa, sb)), float(sa), float(sb), int(tokens), fragments))
    pairs.sort(key=lambda p: (-p.similarity, -p.tokens, p.a, p.b))
    (out / "similar.json").write_text(json.dumps({"lab": lab, "threshold": threshold,
                                                  "pairs": [asdict(p) for p in pairs]}, indent=1))
    _write_html(out / "similar.html", lab, pairs, threshold, len(names), len(refs))
    return pairs


def _write_html(path: Path, lab: str, pairs: Sequence[Pair], threshold: float, n: int, refs: int) -> None:
    from .feedback import sanitize_html

    e = html.escape
    body = [f"<h1>Similar submissions: {e(lab)}</h1>",
            f"<p>{n} student(s){f' and {refs} reference(s)' if refs else ''}; {len(pairs)} pair(s) share at least "
            f"{threshold:.0%} of one side's own code (names, comments and the lab's given code ignored). A pair is a "
            "lead to read, not a verdict.</p>"]
    for p in pairs:
        body.append(f"<h2>{e(p.a)} &amp; {e(p.b)}: {p.similarity:.0%} ({p.tokens} tokens; {p.similarity_a:.0%} of "
                    f"{e(p.a)}'s code, {p.similarity_b:.0%} of {e(p.b)}'s)</h2><table>"
                    f"<tr><th>{e(p.a)}</th><th>{e(p.b)}</th></tr>")
        for fa, fb in p.fragments:
            body.append(f"<tr><td><pre>{e(fa)}</pre></td><td><pre>{e(fb)}</pre></td></tr>")
        body.append("</table>")
    style = ("body{font-family:system-ui,sans-serif;margin:2rem}table{border-collapse:collapse;width:100%}"
             "td,th{border:1px solid #ccc;vertical-align:top;padding:.3rem;width:50%}pre{white-space:pre-wrap;margin:0}")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>similar: {e(lab)}</title><style>{style}</style>"
            f"</head><body>{''.join(body)}</body></html>")
    path.write_text(sanitize_html(page), encoding="utf-8")
