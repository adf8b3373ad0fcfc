"""The setup files agree with each other and with what CI and the README promise."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _requirements() -> dict[str, str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out = {}
    for req in deps["dependencies"] + deps["optional-dependencies"]["dev"]:
        m = re.match(r"([A-Za-z0-9_.-]+)\s*([^;]*)", req)
        out[m[1].lower()] = m[2].replace(" ", "")
    return out


def test_environment_yml_has_the_same_dependencies_and_ranges():
    conda = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"\s+- ([A-Za-z0-9_.-]+)([<>=!][^#\s]*)?", line)
        if m:
            conda[m[1].lower()] = (m[2] or "").replace(" ", "")
    conda["torch"] = conda.pop("pytorch")
    for name, spec in _requirements().items():
        assert name in conda, f"{name} is in pyproject.toml but not environment.yml"
        assert conda[name] == spec, f"{name}: pyproject {spec!r} vs environment.yml {conda[name]!r}"


def test_torch_is_a_range_in_the_package_and_pinned_only_for_cpu_machines():
    assert not _requirements()["torch"].startswith("==")
    assert "torch==2.13.0" in (ROOT / "constraints" / "cpu.txt").read_text()
    assert "constraints/cpu.txt" in (ROOT / "Makefile").read_text()


def test_ci_and_readme_use_the_same_commands():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make lab" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text()
    for target in ("setup", "lab", "test", "release", "grade", "gpu-check"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile lacks {target}"
    assert "make gpu-check" in (ROOT / ".github" / "workflows" / "gpu.yml").read_text()
    assert "make test" in (ROOT / ".github" / "workflows" / "ci.yml").read_text()


def test_nbgrader_config_points_at_solutions_and_labs():
    text = (ROOT / "nbgrader_config.py").read_text()
    assert 'source_directory = "solutions"' in text and 'release_directory = "labs"' in text


def test_nbgrader_config_loads_and_applies_gpudls_settings():
    from traitlets.config import Config

    c = Config()
    exec(compile((ROOT / "nbgrader_config.py").read_text(), "nbgrader_config.py", "exec"), {"get_config": lambda: c})
    assert c.CourseDirectory.source_directory == "solutions" and c.CourseDirectory.release_directory == "labs"
    assert c.Execute.timeout and c.Execute.timeout > 0           # gpudl's per-cell limit, not nbgrader's default
