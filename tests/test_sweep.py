"""The solution keeps full marks under many students' seeds (a sample here; `gpudl sweep --all
--students 300` is the whole sweep), and the sweep names the seeds that lose points."""
from __future__ import annotations

import nbformat
import pytest

from conftest import ROOT, all_mutants
from gpudl import notebooks
from gpudl_instructor import cli, pipeline, sweep

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("lab", ["lab01_performance_basics", "lab05_layouts_conv"])
def test_the_solution_keeps_full_marks_under_a_sample_of_seeds(lab):
    result = sweep.sweep(lab, 3, secret="sweep-sample", root=ROOT, echo=lambda *_: None)
    assert result.failures == [] and result.full == 3


def test_a_wrong_solution_loses_points_under_every_seed_and_the_sweep_names_them(tmp_path):
    lab = "lab01_performance_basics"
    mutant = next(m for m in all_mutants() if m.lab == lab and not m.replacements)
    solution = notebooks.read(ROOT / "solutions" / lab / f"{lab}.ipynb")
    wrong = notebooks.replace_source(solution, mutant.cell, mutant.planted(""))
    path = tmp_path / f"{lab}.ipynb"
    nbformat.write(wrong, str(path))
    result = sweep.sweep(lab, 2, secret="sweep-sample", root=ROOT, notebook=path, echo=lambda *_: None)
    assert result.full == 0
    assert {s for s, _, _ in result.failures} == {"student0000", "student0001"}
    assert {cell for _, cell, _ in result.failures} >= set(mutant.fails)
    assert "0 of 2 students at full marks" in result.lines()[0]


def test_seeds_differ_per_student_and_the_command_checks_its_arguments():
    seeds = {pipeline.student_seed("s", "lab01_performance_basics", f"student{i:04d}") for i in range(300)}
    assert len(seeds) == 300
    with pytest.raises(ValueError, match="--students"):
        sweep.sweep("lab01_performance_basics", 0, secret="s", root=ROOT)
    args = cli.parser().parse_args(["sweep", "--all", "--students", "5"])
    assert args.all and args.students == 5 and args.fn is cli.sweep
    with pytest.raises(FileNotFoundError, match="did you mean lab01_performance_basics"):
        cli.sweep(cli.parser().parse_args(["sweep", "lab01_perf", "--students", "1"]))
