"""Visible tests teach: a mistake of the mutant bank fails the visible cases a student runs.

A student's copy of a lab has its test cells without the hidden region, so what a student
learns before grading is what the visible cases say. For every mutant, this test plants it into
a copy of the solution notebook whose test cells have their hidden regions removed, grades it
in-process (``inprocess.autograde``), and requires that the exercise it breaks loses points.
Questions are the rule's exception (``@question``: a visible check says only whether the answer is
well-formed, so that trial and error in the notebook learns nothing; ``test_labs`` proves that
grading takes their points). The only other exceptions are listed in ``VISIBLE_PASSES``, each with
the reason no visible case can catch it; the list must stay exact (a listed mutant that starts failing the visible cases must
leave the list) and short (at most 2% of the bank), and no pitfall an exercise's text names may
be on it.

To stay quick, a mutant's notebook keeps only what its exercise's test cells need: the setup
cell, every solution cell, locked cells that define functions (a launcher the lab provides),
and the test cells of the exercise; ``test_pruned_solution_passes_every_visible_cell`` proves
that this pruning loses nothing the tests need.
"""
from __future__ import annotations

import ast
import copy
import re

import pytest

import inprocess
from conftest import ROOT, all_mutants, lab_names
from gpudl import notebooks

LABS = lab_names()
MUTANTS = all_mutants()
pytestmark = pytest.mark.slow

# Mutants that pass the visible cases of their exercise, and why no visible case can catch them.
VISIBLE_PASSES: dict[str, str] = {
}

_HIDDEN = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.S)
_SOLUTIONS: dict[str, object] = {}


def _solution(lab: str):
    if lab not in _SOLUTIONS:
        _SOLUTIONS[lab] = notebooks.read(ROOT / "solutions" / lab / f"{lab}.ipynb")
    return _SOLUTIONS[lab]


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _defines_functions(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in tree.body)


def visible_notebook(lab: str, tests: set[str] | None = None, cell: str | None = None, source: str | None = None):
    """The solution as a student's visible tests see it: hidden regions removed, ``cell``'s
    source replaced by ``source``, and only what the test cells ``tests`` (default: all) need."""
    nb = copy.deepcopy(_solution(lab))
    if cell is not None:
        nb = notebooks.replace_source(nb, cell, source)
    kept = []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        meta = _meta(c)
        if meta.get("grade"):
            if tests is None or meta["grade_id"] in tests:
                c.source = _HIDDEN.sub("", c.source)
                kept.append(c)
        elif meta.get("solution") or meta.get("grade_id") == "setup" or (meta.get("locked") and _defines_functions(c.source)):
            kept.append(c)
    last = max(i for i, c in enumerate(kept) if _meta(c).get("grade"))
    nb.cells = kept[:last + 1]
    return nb


def _planted_source(mutant) -> str:
    return mutant.planted(notebooks.find_cell(_solution(mutant.lab), mutant.cell).source)


def test_the_allow_list_is_short_and_names_real_mutants():
    ids = {m.id for m in MUTANTS}
    assert set(VISIBLE_PASSES) <= ids, f"unknown mutants listed: {sorted(set(VISIBLE_PASSES) - ids)}"
    assert len(VISIBLE_PASSES) <= 0.02 * len(MUTANTS), (
        f"{len(VISIBLE_PASSES)} of {len(MUTANTS)} mutants pass the visible tests: strengthen the visible cases")
    assert all(reason.strip() for reason in VISIBLE_PASSES.values())


@pytest.mark.parametrize("lab", LABS)
def test_pruned_solution_passes_every_visible_cell(lab):
    nb = visible_notebook(lab)
    points = notebooks.graded_cells(nb)
    assert inprocess.autograde(nb, seed="visible") == points


def _questions_only(mutant) -> bool:
    """Whether every test cell the mutant fails calls only question checks (``@question``): their
    visible part judges the answer's form, and the verdict comes at grading (test_labs proves it)."""
    from gpudl.grading import boundary
    from gpudl_instructor.checker import expected_checks

    wanted = expected_checks(_solution(mutant.lab))
    names = {name for cell in mutant.fails for name, _ in wanted.get(cell, ())}
    return bool(names) and all(getattr(boundary.registered_check(n), "__gpudl_question__", False) for n in names)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
@pytest.mark.usefixtures("quick_deadlocks")
def test_visible_cases_catch_the_mutant(mutant):
    if _questions_only(mutant) and mutant.id not in VISIBLE_PASSES:
        pytest.skip("a question's answer: the visible check judges its form, the verdict comes at grading")
    nb = visible_notebook(mutant.lab, set(mutant.fails), mutant.cell, _planted_source(mutant))
    points = notebooks.graded_cells(nb)
    scores = inprocess.autograde(nb, seed="visible")
    caught = any(scores[cell] < points[cell] for cell in mutant.fails)
    if mutant.id in VISIBLE_PASSES:
        assert not caught, (f"{mutant.id} is listed as passing the visible cases, but they catch it now: "
                            "take it off VISIBLE_PASSES")
    else:
        assert caught, (f"{mutant.description!r} ({mutant.id}) passes the visible cases of "
                        f"{', '.join(mutant.fails)}: add a visible case that catches it")


# --- what a student sees in a real kernel -------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

_CELLS = {
    "setup": "from gpudl.grading import lab01 as check, lab02 as check2\nimport numpy as np",
    "passes": ("def utilization(achieved, peak):\n    return achieved / peak\n\n"
               "check.utilization(utilization)"),
    "wrong": ("def bound(flops, nbytes, peak_flops, peak_bandwidth):\n"
              "    return 'compute' if flops / nbytes < peak_flops / peak_bandwidth else 'memory'\n\n"
              "check.bound(bound)"),
    "raises": ("def batch_latency(throughput_fps, batch):\n    return batch / 0\n\ncheck.batch_latency(batch_latency)"),
    "adapter": ("from tqdm.auto import tqdm\n\n"
                "def sweep(sizes, dtypes, measure, progress=True):\n"
                "    return {d: [measure(n, d) for n in tqdm(sizes)] for d in dtypes}\n\n"
                "check2.sweep(sweep)"),
    "plot": ("def plot_roofline(ax, peak_flops, peak_bandwidth, ops):\n"
             "    ax.plot([1, 2], [1, 2])\n\n"
             "check.plot_roofline(plot_roofline)"),
}
_TEACHING = {"wrong": "below the ridge point", "raises": "ZeroDivisionError", "adapter": "progress=False",
             "plot": "log scales"}
_GRADER_TRACES = ("boundary.py", "grading/__init__.py", "gpudl/grading", "# noqa", "During handling of the above",
                  "call_student", "check_cases", "run_student", "The above exception was the direct cause")


def test_a_kernel_shows_the_teaching_message_only_and_one_line_on_success(tmp_path):
    """Executed by nbclient in a real kernel, as a student runs it: a passing check prints one
    line to stdout and nothing to stderr; a failing one shows its teaching message, with no frame
    of the grader, no `# noqa` line and no chain of exceptions."""
    import nbformat
    from nbclient import NotebookClient

    from gpudl.grading.boundary import PASSED

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src, metadata={"name": name})
                                         for name, src in _CELLS.items()])
    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    cells = {c.metadata["name"]: c for c in nb.cells}
    for name, cell in cells.items():
        assert not [o for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"], (
            f"cell {name!r} wrote to stderr: {cell.outputs}")
    assert [o.output_type for o in cells["setup"].outputs] == []
    assert [(o.output_type, o.get("text")) for o in cells["passes"].outputs] == [("stream", PASSED + "\n")]
    for name, teaching in _TEACHING.items():
        errors = [o for o in cells[name].outputs if o.output_type == "error"]
        assert len(errors) == 1 and errors[0].ename == "GradingError", (name, cells[name].outputs)
        shown = _ANSI.sub("", "\n".join(errors[0].traceback))
        assert teaching in errors[0].evalue and teaching in shown, (name, shown)
        leaks = [t for t in _GRADER_TRACES if t in shown]
        assert not leaks, f"cell {name!r} shows grader internals {leaks}:\n{shown}"
        assert PASSED not in "".join(o.get("text", "") for o in cells[name].outputs)


# --- lab 07's kernel with the GPU's 64 x 64 tiles ------------------------------------------------------

def _kernel_from_cell(source: str):
    """The @triton.jit kernel a cell's source defines, compiled as the in-process grader compiles a
    cell (Triton reads a kernel's source through linecache)."""
    from gpudl_instructor.inprocess import _compile_cell

    statements, _ = _compile_cell("import triton\nimport triton.language as tl\n\n" + source,
                                  "<lab07 attention_kernel cell>")
    namespace: dict = {}
    exec(statements, namespace)
    return namespace["attention_kernel"]


@pytest.mark.parametrize("mutant", [None, "lab07_attention/attention_kernel__no_rescale"])
def test_lab07_kernel_cases_cross_key_blocks_with_a_gpus_tiles(mutant, monkeypatch):
    """On a GPU the kernel's tiles are 64 x 64; the visible and hidden cases must still span several
    key blocks there, or a kernel that never rescales its accumulator passes them (it lost only the
    speed test's points on an H200). Run here in the interpreter with the GPU's tiles."""
    import math

    import torch
    import triton

    from gpudl.grading import GradingError, lab07
    from gpudl_instructor.checks import lab07 as hidden

    source = notebooks.find_cell(_solution("lab07_attention"), "attention_kernel").source
    if mutant is not None:
        source = next(m for m in MUTANTS if m.id == mutant).planted(source)
    kernel = _kernel_from_cell(source)
    monkeypatch.setattr(lab07, "_block", lambda: 64)

    def wrapper(q, k, v, causal=False):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        z, lq, d = q.shape
        out = torch.empty_like(q)
        kernel[(triton.cdiv(lq, 64), z)](q, k, v, out, lq, k.shape[1], 1.0 / math.sqrt(d),
                                         HEAD_DIM=d, BLOCK_M=64, BLOCK_N=64, CAUSAL=causal)
        return out

    for check in (lab07.attention_kernel, hidden.attention_kernel):
        if mutant is None:
            check(wrapper, kernel)
        else:
            with pytest.raises(GradingError):
                check(wrapper, kernel)
