"""Figures stay readable: log axes without colliding labels, rooflines that cover what they mark."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gpudl import hardware, plots, roofline  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_overlapping_labels_finds_texts_on_top_of_each_other():
    fig, ax = plt.subplots()
    ax.annotate("first label", (1, 1))
    ax.annotate("second label", (1, 1))
    ax.annotate("far away", (0, 0))
    assert plots.overlapping_labels(fig) == [("first label", "second label")]


@pytest.mark.parametrize("sizes,base", [
    ([256, 512, 1024, 2048, 4096], 2),        # course 07's sweep, whose minor labels collided
    ([128, 256, 512, 1024, 2048], 2),         # lab 07's
    ([1, 2, 4, 8], 2),
    ([300, 1000, 3000], 10),
    ([10**k for k in range(2, 10)], 10),
])
def test_log_axis_labels_the_measured_sizes_and_nothing_collides(sizes, base):
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(sizes, np.square(sizes, dtype=float), "o-")
    plots.log_axis(ax, "x", sizes, base=base)
    assert ax.get_xscale() == "log"
    assert plots.overlapping_labels(fig) == []
    labels = [t.get_text() for t in ax.xaxis.get_ticklabels() if t.get_text()]
    assert labels == [f"{float(s):g}" for s in sizes]
    assert not [t.get_text() for t in ax.xaxis.get_ticklabels(minor=True) if t.get_text()]


def test_log_axis_refuses_what_a_log_axis_cannot_show():
    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="positive"):
        plots.log_axis(ax, "x", [0, 1, 2])
    with pytest.raises(ValueError, match="'x' or 'y'"):
        plots.log_axis(ax, "z")


def _roof_covers_markers(ax) -> None:
    x = np.asarray(ax.lines[0].get_xdata(), dtype=float)
    marks = [float(line.get_xdata()[0]) for line in ax.lines[1:] if len(line.get_xdata()) == 1]
    assert marks, "no markers drawn"
    assert x.min() < min(marks) and x.max() > max(marks), f"roof spans {x.min():.3g}..{x.max():.3g}, marks {marks}"


def test_roofline_plot_covers_every_op_even_outside_its_default_range():
    ops = [roofline.Op("tiny", 1.0, 100.0), roofline.Op("huge", 1e9, 1e4), roofline.Op("mid", 300.0, 2.0)]
    ax = roofline.roofline_plot("V100", "fp16", ops)
    _roof_covers_markers(ax)


def test_the_lectures_roofline_labels_do_not_collide():
    from gpudl_instructor.references.lab01 import linear_bytes, linear_flops     # lab01's answers
    ops = [roofline.Op("linear 1024->4096, b=512", linear_flops(512, 1024, 4096),
                       linear_bytes(512, 1024, 4096, "fp16")),
           roofline.Op("linear 1024->4096, b=1", linear_flops(1, 1024, 4096),
                       linear_bytes(1, 1024, 4096, "fp16")),
           roofline.Op("max pool 3x3", roofline.pool2d_flops(10**6, 3), roofline.pool2d_bytes(10**6, 10**6, "fp16")),
           roofline.Op("ReLU", roofline.elementwise_flops(10**6), roofline.elementwise_bytes(10**6, "fp16")),
           roofline.Op("layer norm", roofline.layer_norm_flops(512, 1024), roofline.layer_norm_bytes(512, 1024, "fp16"))]
    ax = roofline.roofline_plot("V100", "fp16", ops)
    _roof_covers_markers(ax)
    assert plots.overlapping_labels(ax.figure) == []


def test_lab01s_roofline_figure_covers_the_points_it_plots():
    """The solution's plot_roofline, drawn by the lab's own figure cell (the lecture's V100 table)."""
    nb = nbformat.read(str(ROOT / "solutions" / "lab01_performance_basics" / "lab01_performance_basics.ipynb"), 4)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in nb.cells}
    ns = {"np": np, "plt": plt, "hardware": hardware}
    for cell in ("attainable", "plot_roofline", "roofline_figure"):
        exec(cells[cell].replace("plt.show()", ""), ns)       # noqa: S102 - the course's own notebook
    ax = ns["ax"]
    assert not ax.get_title().startswith("plot_roofline is not written")
    _roof_covers_markers(ax)
    assert plots.overlapping_labels(ax.figure) == []
