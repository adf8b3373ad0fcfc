"""Imported once by the server that students' grading processes fork from (``gpudl grade``):
everything a student's process needs is imported and warmed here, so each student starts with
it ready instead of paying for it again.

Importing this module imports nbgrader, nbconvert, torch, matplotlib and the lab grading
modules (``autograde.import_labs``: on a GPU machine too, with CUDA's start refused), configures
nbgrader's database mappings, and converts a two-cell notebook to HTML
with the feedback exporter (which compiles the templates, the Markdown renderer's and the
sanitizer's regular expressions). Nothing else imports it.
"""
from __future__ import annotations

import importlib
import warnings
from pathlib import Path


def warm() -> None:
    warnings.simplefilter("ignore")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import nbformat
    import sqlalchemy.orm
    from nbconvert.exporters import HTMLExporter
    from nbconvert.preprocessors.sanitize import SanitizeHTML

    import nbgrader.api  # noqa: F401
    from . import autograde, feedback  # noqa: F401
    from gpudl.grading import boundary
    from . import checker  # noqa: F401

    sqlalchemy.orm.configure_mappers()
    from gpudl import grading
    autograde.import_labs(grading)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# warm *up* $x^2$ <b>x</b>"),
                nbformat.v4.new_code_cell("print('x')", outputs=[nbformat.v4.new_output("stream", text="x\n")])]
    sanitize = SanitizeHTML()
    sanitize.preprocess(nb, {})
    from nbgrader.converters.generate_feedback import GenerateFeedback  # noqa: F401 - its templates
    template = Path(GenerateFeedback.__module__ and importlib.import_module("nbgrader").__file__).parent
    exporter = HTMLExporter(template_name="feedback",
                            extra_template_basedirs=[str(template / "server_extensions" / "formgrader" / "templates")])
    try:
        body, _ = exporter.from_notebook_node(nb)
        feedback.sanitize_html(body)
    except Exception:  # noqa: BLE001 - only a warm-up
        pass
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        raise RuntimeError("CUDA was started in the server students' processes fork from: they could not use it")


warm()
