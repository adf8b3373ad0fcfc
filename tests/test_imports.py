"""The packages' import graph: no cycles, nothing imports the CLI, every module imports alone,
and the course edition (``gpudl``) never imports the instructor's part (``gpudl_instructor``).

The graph is read from the source (``ast``), so it sees imports inside functions too: a
deferred import that closes a cycle (``cli -> runlabs -> cli`` once did) is still a cycle,
only one that fails later. A module may use its own package's names (``from . import x``
where ``x`` is defined in the package's ``__init__``): the package is always imported before
its modules, so that edge is not counted. ``gpudl.__main__`` (``python -m gpudl``) is the
CLI's entry point and the one module that may import it. Imports under ``if TYPE_CHECKING:``
are for annotations and never run: they are not edges.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import gpudl
import gpudl_instructor

PACKAGES = [Path(gpudl.__file__).resolve().parent, Path(gpudl_instructor.__file__).resolve().parent]
ENTRY_POINTS = {"gpudl.__main__", "gpudl_instructor.__main__"}   # running one runs a CLI: not a module to import
CLIS = {"gpudl.cli", "gpudl_instructor.cli"}


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of both packages: dotted name -> (file, is a package's __init__)."""
    out = {}
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The package's modules that ``name`` imports anywhere in its source, relative imports resolved."""
    path, is_pkg = MODULES[name]
    here = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                   for stmt in block.body for n in ast.walk(stmt)}    # annotations only: never run
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")[:len(here.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in MODULES)
    return found - {name}


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name in MODULES:
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        graph[name] = _imports(name) - ancestors
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}          # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_reader_sees_deferred_and_relative_imports():
    graph = _graph()
    assert "gpudl.cli" in graph["gpudl.__main__"]
    assert {"gpudl_instructor.pipeline", "gpudl.table"} <= graph["gpudl_instructor.runlabs"]
    assert "gpudl.benchmarks" in graph["gpudl_instructor.runlabs"]              # inside a function
    assert "gpudl.conv.descriptors" in graph["gpudl.conv.find"]       # from .descriptors import ...
    assert "gpudl.hardware" in graph["gpudl.conv.descriptors"]        # from ..hardware import ...
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_module_imports_the_cli():
    importers = sorted(name for name, deps in _graph().items()
                       if "gpudl_instructor.cli" in deps and name not in ENTRY_POINTS
                       or "gpudl.cli" in deps and name not in ENTRY_POINTS | {"gpudl_instructor.cli"})
    assert not importers, f"{importers} import a CLI; the CLI calls the package, never the reverse"


def test_the_course_edition_never_imports_the_instructors_part():
    graph = _graph()
    bad = {name: sorted(d for d in deps if d.startswith("gpudl_instructor"))
           for name, deps in graph.items() if name.split(".")[0] == "gpudl"}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, f"course-edition modules import the instructor's part: {bad}"
    dynamic = re.compile(r"""(import_module|__import__|find_spec)\(\s*f?["']gpudl_instructor""")
    named = sorted(name for name, (path, _) in MODULES.items()
                   if name.split(".")[0] == "gpudl" and dynamic.search(path.read_text()))
    assert not named, f"course-edition modules import gpudl_instructor by name: {named}"


def test_benchmarks_import_concept_modules_and_never_the_reverse():
    graph = _graph()
    for name, deps in graph.items():
        if not name.startswith(("gpudl.benchmarks", "gpudl_instructor.benchmarks")):
            bad = sorted(d for d in deps if d.startswith("gpudl.benchmarks."))
            assert not bad, f"{name} imports the benchmark modules {bad}: a concept module does not know its benchmark"


# A course-edition module imports in an interpreter where the instructor's part cannot be found,
# as in a hand-out and in the grading sandbox.
_NO_INSTRUCTOR = ("import sys, importlib.abc\n"
                  "class _Block(importlib.abc.MetaPathFinder):\n"
                  "    def find_spec(self, name, path, target=None):\n"
                  "        if name.split('.')[0] == 'gpudl_instructor': raise ImportError('not in the course edition')\n"
                  "sys.meta_path.insert(0, _Block())\n")

# Each module is imported in a child forked from an interpreter that has imported only numpy and
# torch (seconds of every import, and nothing of either package): what a module needs of gpudl it
# must import itself, as in a fresh interpreter. The server refuses to start if importing torch
# brought in a library whose import gpudl configures first (Triton's interpreter, the simulator).
_SERVER = r"""
import json, os, sys, traceback
import numpy, torch
early = [m for m in ("triton", "numba", "gpudl", "gpudl_instructor") if m in sys.modules]
if early:
    raise SystemExit(f"importing torch imported {early}: modules could not import alone in a child")
for line in sys.stdin:
    code = json.loads(line)
    path = os.path.join(os.environ["GPUDL_IMPORTS_TMP"], f"{os.getpid()}.err")
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)        # stdout is the answers' channel
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
        try:
            exec(compile(code, "<import alone>", "exec"), {"__name__": "__main__"})
            status = 0
        except BaseException:
            traceback.print_exc()
            status = 1
        sys.stderr.flush()
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    with open(path) as f:
        tail = f.read()[-1500:]
    print(json.dumps([os.waitstatus_to_exitcode(status), tail]), flush=True)
"""


def _run_alone(codes: list[str], tmp: Path) -> list[tuple[int, str]]:
    """(exit status, the end of its stderr) of each code, run in a child of its own."""
    env = {**os.environ, "GPUDL_DEVICE": "cpu", "GPUDL_IMPORTS_TMP": str(tmp)}
    server = subprocess.Popen([sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    out = []
    try:
        for code in codes:
            server.stdin.write(json.dumps(code) + "\n")
            server.stdin.flush()
            line = server.stdout.readline()
            if not line:
                raise AssertionError(f"the import server stopped: {server.stderr.read()[-1500:]}")
            out.append(tuple(json.loads(line)))
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    return out


def _import_code(name: str) -> str:
    block = _NO_INSTRUCTOR if name.split(".")[0] == "gpudl" else ""
    return (f"{block}import sys, importlib; importlib.import_module({name!r}); "
            f"assert {name!r} in {sorted(CLIS)!r} or not {{'gpudl.cli', 'gpudl_instructor.cli'}} & set(sys.modules), "
            "'imported a CLI'")


def test_each_import_runs_in_a_child_that_nothing_before_it_touched(tmp_path):
    (tmp_path / "first.py").write_text("import sys\nsys.first_was_here = True\n")
    (tmp_path / "second.py").write_text("import sys\nprint('a module that prints')\nassert sys.first_was_here\n")
    path = f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
    together, = _run_alone([path + "import first, second"], tmp_path)
    assert together == (0, "")                           # in one interpreter, second leans on first
    first, second, ours = _run_alone([path + "import first", path + "import second", _import_code("gpudl.cli")],
                                     tmp_path)
    assert first == (0, "")
    assert second[0] == 1 and "AttributeError" in second[1] and "first_was_here" in second[1]
    assert ours == (0, "")


@pytest.mark.slow
def test_every_module_imports_alone(tmp_path):
    names = sorted(set(MODULES) - ENTRY_POINTS)
    halves = [names[0::2], names[1::2]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = pool.map(lambda half: list(zip(half, _run_alone([_import_code(n) for n in half], tmp_path))), halves)
    failed = [(name, err) for half in done for name, (rc, err) in half if rc != 0]
    assert not failed, "\n\n".join(f"{name}:\n{err}" for name, err in failed)


# Run a notebook's code cells in order, then print the torch modules it imported.
_RUN_CELLS = """
import json, sys
ns = {"__name__": "__main__"}
for cell in json.load(open(sys.argv[1]))["cells"]:
    if cell["cell_type"] == "code":
        exec(cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"]), ns)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "torch")))
"""


def test_lab01_and_its_checks_run_without_torch(tmp_path):
    """Lab 01 needs numpy only, so its kernel never imports torch (about 1.5 s of every graded lab 01
    kernel, and a test run grades over a hundred): not through a check's forbidden list, which names
    ``gpudl.collectives.cost``, nor through ``gpudl.collectives``, whose torch modules load when asked."""
    from conftest import student_copy
    import nbformat

    path = tmp_path / "lab01.ipynb"
    nbformat.write(student_copy("lab01_performance_basics"), str(path))
    env = {**os.environ, "GPUDL_DEVICE": "cpu", "MPLBACKEND": "Agg"}
    run = subprocess.run([sys.executable, "-c", _RUN_CELLS, str(path)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-1500:]
    assert json.loads(run.stdout.splitlines()[-1]) == []
    lazy = subprocess.run([sys.executable, "-c", "import sys; from gpudl.collectives import launch, cost, traffic; "
                           "print(launch.__module__, cost.__name__, traffic.__module__, 'torch' in sys.modules)"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert lazy.stdout.split() == ["gpudl.collectives.launch", "gpudl.collectives.cost", "gpudl.collectives.ring",
                                   "True"], lazy.stderr[-1500:]
