"""Submissions: found in a folder or an LMS zip, inspected without running them, repaired.

Every submission becomes exactly one ``Submission``, gradable or not, so that the grades have
one row per submission whatever was handed in:

- a folder of student folders (``alice/lab01.ipynb``, nested folders too), loose notebooks,
  a Canvas zip (``name_123_456_LAB.ipynb``) or a Moodle zip
  (``Full Name_123_assignsubmission_file_/``);
- symbolic links are refused with a reason, never followed, their target never echoed;
- sizes are checked before anything is parsed (a zip member is read through a bounded
  stream, so a member that lies about its size or a compression bomb costs at most the limit);
- a zip entry with an unsafe path gets its own row, the rest of the class is still graded;
- two entries that map to the same student get distinct names (``alice``, ``alice-2``).

``inspect_submission`` reads a notebook without running it (invalid JSON, duplicated graded
cells, edited or deleted test cells); ``repair`` writes the copy that is graded: deleted graded
cells restored in their place from the release, and hidden-test markers in the student's own
cells made inert (they would break the feedback of that student). ``review_flags`` lists code
in the student's cells that reaches into the grader's machinery (rebinding the package's
functions, IPython hooks, shell escapes, frames, ``__wrapped__``, ``exec``): such code cannot raise a score,
since the checker judges outside the kernel, but an instructor may want to read it.

Public names: ``Submission``, ``find_submissions``, ``inspect_submission``, ``repair``,
``review_flags``, ``strip_outputs``, ``MAX_NOTEBOOK_BYTES``, ``MAX_FILE_BYTES``.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

MAX_NOTEBOOK_BYTES = 32 << 20        # what is parsed whole: a notebook without its outputs
MAX_FILE_BYTES = 256 << 20           # a file larger than this is not read at all (outputs included)
MAX_ZIP_MEMBERS = 20_000


@dataclass
class Submission:
    student: str
    notebook: Path | None       # None when nothing gradable was found
    problem: str = ""           # why it cannot be graded, when notebook is None
    name: str = ""              # the student's name as the LMS wrote it (for the gradebook)
    lms: str = ""               # "canvas" or "moodle" when the LMS named the file or folder
    lms_id: str = ""            # the LMS's own id of the student (Canvas user id, Moodle participant id)
    late: bool = False          # the LMS marked the submission late (Canvas: LATE in the file name)


# Canvas: name_USERID_SUBMISSIONID_file, with LATE_ before the user id for a late one.
_CANVAS = re.compile(r"^(?P<student>[^_]+)_(?P<late>LATE_)?(?P<uid>\d+)_\d+_(?P<name>.+)$")
# Moodle: "Full Name_PARTICIPANTID_assignsubmission_file_" folders.
_MOODLE = re.compile(r"^(?P<student>.+?)_(?P<pid>\d+)_assignsubmission_file_?$")


def student_id(raw: str) -> str:
    """A name safe as a folder and gradebook id: letters, digits, '_', '.', '-'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw).strip("-.") or "unknown"


def _regular_notebook(path: Path) -> str:
    """Why ``path`` cannot be read as a submitted notebook, or ''."""
    try:
        st = os.lstat(path)
    except OSError:
        return "the notebook cannot be read"
    if stat.S_ISLNK(st.st_mode):
        return "the notebook is a symbolic link (not followed)"
    if not stat.S_ISREG(st.st_mode):
        return "the notebook is not a regular file"
    if st.st_size > MAX_FILE_BYTES:
        return f"the notebook is {st.st_size / 2**20:.0f} MiB, over the {MAX_FILE_BYTES >> 20} MiB limit"
    return ""


_JSON_TOKEN = re.compile(rb'["\[\]{}]')
_SPACE = re.compile(rb"\s*")
_DROPPED = {b"outputs": b"[]", b"attachments": b"{}"}   # grading makes new outputs; attachments are images


def _string_end(raw: bytes, start: int) -> int:
    """The index after the JSON string that starts at ``raw[start] == '"'``."""
    j = start
    while True:
        j = raw.find(b'"', j + 1)
        if j < 0:
            raise ValueError("an unterminated string")
        k = j - 1
        while raw[k] == 0x5C:                 # count the backslashes before the quote
            k -= 1
        if (j - 1 - k) % 2 == 0:
            return j + 1


def _value_end(raw: bytes, start: int) -> int:
    """The index after the JSON value (an array or object, or a scalar) at ``start``."""
    if raw[start:start + 1] not in (b"[", b"{"):
        m = re.compile(rb"[,}\]]").search(raw, start)
        return m.start() if m else len(raw)
    depth, i = 0, start
    while True:
        m = _JSON_TOKEN.search(raw, i)
        if m is None:
            raise ValueError("an unterminated array or object")
        c = m.group()
        if c == b'"':
            i = _string_end(raw, m.start())
            continue
        depth += 1 if c in (b"[", b"{") else -1
        i = m.end()
        if depth == 0:
            return i


def strip_outputs(raw: bytes) -> bytes:
    """The notebook JSON ``raw`` with every cell's outputs (and attachments) emptied, read as a
    stream of tokens (strings skipped at C speed): a notebook whose embedded images weigh 60 MB
    is parsed as the few hundred kilobytes of code and text it holds."""
    out, pos, i = [], 0, 0
    while True:
        m = _JSON_TOKEN.search(raw, i)
        if m is None:
            break
        if m.group() != b'"':
            i = m.end()
            continue
        end = _string_end(raw, m.start())
        key = raw[m.start() + 1:end - 1]
        colon = _SPACE.match(raw, end).end()
        if key in _DROPPED and raw[colon:colon + 1] == b":":
            value = _SPACE.match(raw, colon + 1).end()
            stop = _value_end(raw, value)
            out += [raw[pos:value], _DROPPED[key]]
            pos = i = stop
        else:
            i = end
    out.append(raw[pos:])
    return b"".join(out)


def _notebooks_in(folder: Path) -> tuple[list[Path], list[str]]:
    """Notebooks under ``folder`` without following links, and the links found."""
    found, links = [], []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if d not in (".ipynb_checkpoints", "__MACOSX") and not d.startswith(".")]
        for d in list(dirnames):
            if (here / d).is_symlink():
                links.append(str((here / d).relative_to(folder)))
                dirnames.remove(d)
        for f in filenames:
            p = here / f
            if p.is_symlink():
                links.append(str(p.relative_to(folder)))
            elif f.endswith(".ipynb"):
                found.append(p)
    return sorted(found), links


def _pick_notebook(folder: Path, lab: str, accept_renamed: bool) -> tuple[Path | None, str]:
    notebooks_, links = _notebooks_in(folder)
    exact = [p for p in notebooks_ if p.name == f"{lab}.ipynb"]
    if not exact and any(Path(link).name == f"{lab}.ipynb" for link in links):
        return None, f"{lab}.ipynb is a symbolic link (not followed)"
    if len(exact) == 1:
        why = _regular_notebook(exact[0])
        return (None, why) if why else (exact[0], "")
    if len(exact) > 1:
        return None, f"{len(exact)} copies of {lab}.ipynb: " + ", ".join(str(p.relative_to(folder)) for p in exact)
    if not notebooks_:
        return None, f"no notebook submitted (expected {lab}.ipynb)"
    if len(notebooks_) == 1 and accept_renamed:
        why = _regular_notebook(notebooks_[0])
        return (None, why) if why else (notebooks_[0], "")
    names = ", ".join(p.name for p in notebooks_)
    return None, (f"renamed notebook: found {names}, expected {lab}.ipynb "
                  "(rename it and resubmit, or grade with --accept-renamed)")


def _unzip(path: Path, dest: Path) -> list[tuple[str, str]]:
    """Extract the notebooks of an LMS zip into ``dest`` through bounded reads; returns the
    entries refused: (member name, reason)."""
    refused: list[tuple[str, str]] = []
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise ValueError(f"{path} has {len(members)} entries, more than {MAX_ZIP_MEMBERS}")
        for info in members:
            name = info.filename
            parts = Path(name).parts
            if info.is_dir():
                continue
            if name.startswith("/") or ".." in parts or (parts and ":" in parts[0]):
                refused.append((name, "an unsafe path in the zip (not extracted)"))
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                refused.append((name, "a symbolic link in the zip (not extracted)"))
                continue
            if any(p.startswith(".") or p == "__MACOSX" for p in parts):
                continue
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)     # the student's folder, even without a notebook
            if not name.endswith(".ipynb"):
                continue
            data, left = [], MAX_FILE_BYTES + 1
            with zf.open(info) as src:
                while left > 0:
                    chunk = src.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    data.append(chunk)
                    left -= len(chunk)
            if left <= 0:
                refused.append((name, f"a notebook over the {MAX_FILE_BYTES >> 20} MiB limit (not extracted)"))
                continue
            target.write_bytes(b"".join(data))
            with contextlib.suppress(ValueError, OverflowError, OSError):   # the LMS's time of the hand-in
                when = time.mktime((*info.date_time, 0, 0, -1))
                os.utime(target, (when, when))
    return refused


def find_submissions(path: str | Path, lab: str, *, workdir: Path | None = None,
                     accept_renamed: bool = False) -> list[Submission]:
    """Every submission under ``path`` (a folder or an LMS zip), one ``Submission`` each."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(f"{path} does not exist (a folder of submissions or an LMS zip is expected)")
    if path.is_symlink():
        raise ValueError(f"{path} is a symbolic link: give the folder or zip itself")
    refused: list[tuple[str, str]] = []
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise ValueError(f"{path} is neither a folder of submissions nor a zip")
        dest = Path(workdir or tempfile.mkdtemp(prefix="gpudl-zip-")) / "unzipped"
        dest.mkdir(parents=True, exist_ok=True)
        refused = _unzip(path, dest)
        path = dest
        entries = [p for p in dest.iterdir() if not p.name.startswith(("__MACOSX", "."))]
        if len(entries) == 1 and entries[0].is_dir() and len(list(entries[0].iterdir())) > 1:
            path = entries[0]          # a zip that wraps the submissions in one folder
    found: list[Submission] = []
    taken: set[str] = set()

    def add(raw: str, nb: Path | None, problem: str, name: str = "", lms: tuple[str, str, bool] = ("", "", False)) -> None:
        sid = student_id(raw)
        base, n = sid, 2
        while sid in taken:
            sid, n = f"{base}-{n}", n + 1
        taken.add(sid)
        found.append(Submission(sid, nb, problem, name or raw, *lms))

    for entry in sorted(path.iterdir()):
        if entry.name.startswith((".", "__MACOSX")):
            continue
        if entry.is_symlink():
            add(entry.stem if entry.suffix == ".ipynb" else entry.name, None,
                "a symbolic link (not followed)")
        elif entry.is_dir():
            m = _MOODLE.match(entry.name)
            raw = m["student"] if m else entry.name
            nb, problem = _pick_notebook(entry, lab, accept_renamed)
            add(raw, nb, problem, lms=("moodle", m["pid"], False) if m else ("", "", False))
        elif entry.suffix == ".ipynb":
            m = _CANVAS.match(entry.name)
            raw = m["student"] if m else entry.stem
            original = m["name"] if m else entry.name
            lms = ("canvas", m["uid"], bool(m["late"])) if m else ("", "", False)
            renamed = original != f"{lab}.ipynb" and not re.fullmatch(rf"{re.escape(lab)}(-\d+)?\.ipynb", original)
            if renamed and not accept_renamed:
                add(raw, None, f"renamed notebook: found {original}, expected {lab}.ipynb", lms=lms)
            else:
                why = _regular_notebook(entry)
                add(raw, None if why else entry, why, lms=lms)
    for member, why in refused:
        parts = [p for p in Path(member).parts if p not in ("..", ".", "/")]
        m = _CANVAS.match(parts[-1]) if parts else None
        raw = m["student"] if m else (parts[-2] if len(parts) > 1 else Path(member).stem)
        mm = _MOODLE.match(raw)
        raw = mm["student"] if mm else raw
        same = [s for s in found if s.student == student_id(raw) and s.notebook is None]
        if same:
            same[0].problem = why          # the folder's row says what happened to its notebook
        else:
            add(raw, None, why)
    return found


def split_name(student: str) -> tuple[str, str]:
    """(first, last) from a student id: ``ada-lovelace`` -> (``ada``, ``lovelace``); ``alice`` -> ("", ``alice``)."""
    parts = [p for p in student.replace("_", "-").replace(".", "-").split("-") if p]
    if len(parts) < 2:
        return "", student
    return " ".join(parts[:-1]), parts[-1]


_HIDDEN = re.compile(r"[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.S)


def _visible(source: str) -> str:
    """A test cell's source without its hidden region (a student's copy never has one)."""
    return _HIDDEN.sub("", source).strip()


def _read(nb_path: Path) -> tuple[nbformat.NotebookNode | None, str]:
    why = _regular_notebook(nb_path)
    if why:
        return None, why
    try:
        data = nb_path.read_bytes()
        if len(data) > MAX_NOTEBOOK_BYTES:
            data = strip_outputs(data)
            if len(data) > MAX_NOTEBOOK_BYTES:
                return None, (f"the notebook's code and text weigh {len(data) / 2**20:.0f} MiB without its outputs, "
                              f"over the {MAX_NOTEBOOK_BYTES >> 20} MiB limit")
        raw = json.loads(data)
        if isinstance(raw, dict) and raw.get("nbformat") == 3 and isinstance(raw.get("worksheets"), list):
            raw = nbformat.convert(nbformat.from_dict(raw), 4)      # an old Jupyter's notebook: read as version 4
        nb = nbformat.from_dict(raw)
        if not isinstance(nb.get("cells"), list):
            return None, "invalid notebook: no list of cells"
        nb = nbformat.convert(nb, 4) if nb.get("nbformat", 4) != 4 else nb
    except Exception as exc:  # noqa: BLE001 - every unreadable file is reported the same way
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return None, f"invalid notebook (not readable as notebook JSON): {first}"
    for cell in nb.cells:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw") \
                or not isinstance(cell.get("source", ""), (str, list)):
            return None, "invalid notebook: a cell without a type or source"
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(str(s) for s in cell["source"])
        cell.setdefault("metadata", {})
        if cell["cell_type"] == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
    return nb, ""


def _gid(cell: dict) -> str | None:
    nbg = cell.get("metadata", {}).get("nbgrader", {})
    return nbg.get("grade_id") if isinstance(nbg, dict) else None


def inspect_submission(nb_path: Path, released: nbformat.NotebookNode) -> tuple[str, list[str]]:
    """Check a submission without running it. Returns (problem, notes): a non-empty problem
    means it cannot be graded; notes say what the grader repairs."""
    nb, why = _read(nb_path)
    if nb is None:
        return why, []
    counts: dict[str, int] = {}
    for cell in nb.cells:
        gid = _gid(cell)
        if gid:
            counts[gid] = counts.get(gid, 0) + 1
    dups = {k: v for k, v in counts.items() if v > 1}
    if dups:
        what = ", ".join(f"'{k}' x{v}" for k, v in sorted(dups.items()))
        return f"duplicated cell: {what} (a copied graded cell; keep one copy of each and resubmit)", []
    notes = []
    by_id = {_gid(c): c for c in nb.cells if _gid(c)}
    for cell in released.cells:
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        gid = nbg.get("grade_id")
        if not gid:
            continue
        if gid not in by_id:
            notes.append(f"cell '{gid}' was deleted; the grader restored it")
        elif nbg.get("locked") and _visible(by_id[gid].source) != _visible(cell.source):
            notes.append(f"cell '{gid}' was edited; the grader restored the original")
    return "", notes


_MARKERS = re.compile(r"(BEGIN|END) HIDDEN TESTS")


def repair(nb_path: Path, released: nbformat.NotebookNode, dest: Path) -> Path:
    """Write the copy of a submission that is graded: every graded cell of the release present
    in the release's order (a deleted one restored from the release where it stood), and
    hidden-test markers in the student's own cells made inert."""
    nb, why = _read(nb_path)
    if nb is None:
        raise ValueError(why)
    order = [_gid(c) for c in released.cells if _gid(c)]
    pos = {gid: i for i, gid in enumerate(order)}
    present = {_gid(c) for c in nb.cells if _gid(c)}
    missing = [c for c in released.cells if _gid(c) and _gid(c) not in present]
    cells: list = []
    for cell in nb.cells:
        gid = _gid(cell)
        if gid in pos:
            while missing and pos[_gid(missing[0])] < pos[gid]:
                cells.append(nbformat.from_dict(json.loads(json.dumps(missing.pop(0)))))
        nbg = cell.get("metadata", {}).get("nbgrader", {})
        if not (isinstance(nbg, dict) and nbg.get("locked")):
            cell["source"] = _MARKERS.sub(r"\1 HIDDEN-TESTS (inert)", cell.get("source", ""))
        cells.append(cell)
    cells.extend(nbformat.from_dict(json.loads(json.dumps(c))) for c in missing)
    nb.cells = cells
    nb.metadata["kernelspec"] = released.metadata.get("kernelspec", {"name": "python3", "display_name": "Python 3",
                                                                     "language": "python"})
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(nb, indent=1))
    return dest


# What honest lab code has no reason to touch: the grader's machinery and the interpreter's.
_SUSPECT_ATTRS = {"__wrapped__", "__closure__", "__code__", "__globals__", "__builtins__", "__dict__", "f_locals",
                  "f_globals", "f_back", "_getframe", "settrace", "setprofile", "set_custom_exc",
                  "input_transformers_post", "input_transformers_cleanup", "ast_transformers", "register_magic_function",
                  "get_referents", "get_referrers", "get_objects", "modules",
                  # switching off torch's hand-off to the guard's TorchFunctionMode (gpudl.grading.forbidden)
                  "DisableTorchFunction", "DisableTorchFunctionSubclass", "_disabled_torch_function_impl",
                  "_pop_torch_function_stack", "_pop_mode", "_pop_mode_temporarily", "__torch_function__",
                  # the autograd engine itself, under the library routines an exercise forbids
                  "_execution_engine", "_engine_run_backward",
                  # the ops of torch's functional collectives, under the ones lab10 forbids
                  "_c10d_functional",
                  # another process, or C++ compiled into this one (neither of which the guard watches)
                  "fork", "forkpty", "posix_spawn", "posix_spawnp", "popen", "execv", "execve", "execvp", "execvpe",
                  "spawnv", "spawnve", "spawnvp", "spawnvpe", "cpp_extension", "load_inline",
                  # reading the package's source: its files, or a function's code as text
                  "getsource", "getsourcelines", "getsourcefile", "getfile", "__file__", "__path__", "__spec__",
                  "__loader__", "get_data"}
_SUSPECT_NAMES = {"exec", "eval", "compile", "__import__", "ctypes", "importlib", "marshal", "get_ipython"}
# Modules whose import is for review: the interpreter's machinery; tracemalloc, which lab07's memory
# check reads in the student's process (stopping or resetting it hides an allocation); and other
# processes, where the guard does not watch (it refuses to start one, but a fork_exec bound early is
# not seen)
_SUSPECT_MODULES = {"ctypes", "importlib", "marshal", "gc", "tracemalloc", "subprocess", "multiprocessing", "pty",
                    "_posixsubprocess", "pexpect"}
# torch's compilers: the guard refuses TorchScript where it refuses a torch routine, and cannot see which
# routines code compiled by either runs
_TORCH_COMPILERS = {"jit", "compile", "_dynamo"}
# os's shell: another process (a name too common elsewhere, platform.system, to flag on its own)
_OS_SHELL = {"system"}


# IPython's syntax in a student's cell: magics that only show or time code, and those whose argument
# is code (reviewed as the cell's own); any other magic, a shell escape (``!cmd``) among them, is for review
_PLAIN_MAGICS = {"matplotlib", "pinfo", "pinfo2", "psearch", "who", "whos", "who_ls", "pwd", "precision",
                 "pprint", "xmode", "page", "pdoc", "pdef", "psource", "pfile", "lsmagic", "magic", "quickref"}
_CODE_MAGICS = {"time": "", "timeit": "nrp", "capture": "", "prun": "DlsT"}   # {magic: options taking a value}
_SHELL_MAGICS = {"system", "sx", "bash", "sh", "script", "bg", "perl", "ruby", "python", "python2", "python3",
                 "pypy", "sc"}


def _parse_cell(source: str) -> Any:
    """A student's cell as Python's ``ast``, IPython's syntax (``%magic``, ``!cmd``) written out as
    the calls IPython makes of it; None if it does not parse (the kernel would only raise there)."""
    import ast

    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - without IPython, or a cell it cannot read: the source as it is
        pass
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _magic_code(name: str, line: str) -> str:
    """The code a line magic of ``_CODE_MAGICS`` runs: its line without the leading options."""
    words = line.split()
    while words and words[0].startswith("-") and len(words[0]) > 1:
        flag = words.pop(0)
        if len(flag) == 2 and flag[1] in _CODE_MAGICS[name] and words:
            words.pop(0)
    return " ".join(words) if words != line.split() else line


def _magic(node: Any) -> tuple[str, str | None] | None:
    """For a call IPython makes of a magic or shell escape (``get_ipython().system(...)``):
    (what to flag, or ""; the code it runs, to review as the cell's own, or None). None for
    any other node."""
    import ast

    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call) and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "get_ipython" and not node.func.value.args):
        return None
    method, args = node.func.attr, node.args
    if method in ("system", "getoutput"):
        return "runs a shell command (!)", None
    if method not in ("run_line_magic", "run_cell_magic") or not args or not isinstance(args[0], ast.Constant) \
            or not isinstance(args[0].value, str):
        return None
    name, sign = args[0].value, "%%" if method == "run_cell_magic" else "%"
    texts = [a.value for a in args[1:] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if name in _SHELL_MAGICS:
        return f"runs a shell command ({sign}{name})", None
    if name in _PLAIN_MAGICS:
        return "", None
    if name in _CODE_MAGICS and texts and len(texts) == len(args) - 1:
        # a line magic's line; a cell magic's line (%%timeit's setup code) and its body
        return "", "\n".join([_magic_code(name, texts[0]), *texts[1:]])
    return f"uses the magic {sign}{name}", None


def _package_aliases(nb: Any) -> dict[str, str]:
    """{name: module} for every name the notebook binds to the package or one of its modules
    (``import gpudl.lstm``, ``from gpudl import bench``, ``from gpudl.grading import lab06 as check``)."""
    import ast

    aliases: dict[str, str] = {}
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        tree = _parse_cell(cell.get("source", ""))
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == "gpudl":
                        aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else "gpudl"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gpudl":
                for a in node.names:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _exercise_names(released: Any) -> set[str]:
    """The functions the lab asks for: those its released solution cells define."""
    import ast

    names: set[str] = set()
    for cell in released.cells:
        if cell.get("cell_type") == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
            tree = _parse_cell(cell.get("source", ""))
            if tree is None:
                continue
            names |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return names


def _package_callable(value: Any, package: dict[str, str]) -> bool:
    """Whether ``value`` (an assignment's right side) names something of the package without
    calling it: ``check._pkg_cell_forward``, ``gpudl.lstm.sgd_step``, ``bench.gemm_flops``."""
    import ast

    node = value
    if not isinstance(node, ast.Attribute):
        return False
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in package


def _private(name: str) -> bool:
    """A name a module keeps to itself (``_zygote``; not a dunder such as ``__version__``)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _of_the_package(node: Any, package: dict[str, str]) -> bool:
    """Whether ``node`` (an attribute's owner) names the package or something in it: a name the
    notebook bound to it, or an attribute chain from one (``gpudl.collectives.launch``)."""
    import ast

    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in package


def _node_flag(node: Any, package: dict[str, str], exercises: set[str]) -> str:
    """What one node of a student's cell does that is for review, or ""."""
    import ast

    what = ""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and "gpudl" in ast.unparse(t.value) or (
                    isinstance(t, ast.Attribute) and ast.unparse(t.value) in ("check",)):
                what = f"rebinds {ast.unparse(t)}"
    if isinstance(node, ast.Assign) and _package_callable(node.value, package) and \
            any(isinstance(t, ast.Name) and t.id in exercises for t in node.targets):
        what = f"binds {', '.join(ast.unparse(t) for t in node.targets)} to the package's {ast.unparse(node.value)}"
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in package \
            and package[node.value.id].startswith("gpudl.grading"):
        what = f"uses the grading module's {ast.unparse(node)}"
    elif isinstance(node, ast.Attribute) and _private(node.attr) and _of_the_package(node.value, package):
        what = f"uses the package's private {ast.unparse(node)}"
    elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            name.split(".")[0] == "gpudl" and any(_private(part) for part in name.split("."))
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [f"{node.module}.{a.name}" for a in node.names] if node.module else [])):
        what = "imports the package's private " + ", ".join(
            a.name for a in node.names if isinstance(node, ast.Import) or _private(a.name)
            or any(_private(part) for part in (node.module or "").split(".")))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
        what = f"calls {node.func.id}"
    elif isinstance(node, ast.Attribute) and node.attr in _SUSPECT_ATTRS:
        what = f"uses .{node.attr}"
    elif isinstance(node, ast.Attribute) and node.attr in _OS_SHELL and ast.unparse(node.value) == "os" or (
            isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in _OS_SHELL for a in node.names)):
        what = "uses os.system"
    elif isinstance(node, ast.Attribute) and node.attr in _TORCH_COMPILERS and ast.unparse(node.value) == "torch":
        what = f"uses torch.{node.attr}"
    elif isinstance(node, ast.ImportFrom) and (node.module or "") == "torch" and \
            any(a.name in _TORCH_COMPILERS for a in node.names):
        what = "imports torch's " + ", ".join(a.name for a in node.names if a.name in _TORCH_COMPILERS)
    elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            m.split(".")[:2] in (["torch", "jit"], ["torch", "_dynamo"])
            for m in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])):
        what = "imports torch's compiler"
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _SUSPECT_ATTRS:
        what = f"defines {node.name}"
    elif isinstance(node, ast.Name) and node.id in _SUSPECT_NAMES:
        what = f"uses {node.id}"
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        parts = {part for m in mods for part in m.split(".")[1:]}
        if isinstance(node, ast.ImportFrom):
            parts |= {a.name for a in node.names}
        if any(m.split(".")[0] in _SUSPECT_MODULES for m in mods) or parts & _SUSPECT_ATTRS:
            what = f"imports {', '.join(mods)}" + (f" ({', '.join(sorted(parts & _SUSPECT_ATTRS))})"
                                                    if parts & _SUSPECT_ATTRS else "")
    return what


def _tree_flag(tree: Any, package: dict[str, str], exercises: set[str]) -> tuple[Any, str]:
    """(line, what) for the first node of ``tree`` that is for review, or (None, ""). A magic's
    call is judged as a magic (``_magic``), and the code a timing magic runs as the cell's own."""
    import ast

    magics = {id(node): m for node in ast.walk(tree) if (m := _magic(node)) is not None}
    spared = {id(node.func.value.func) for node in ast.walk(tree) if id(node) in magics}
    for node in ast.walk(tree):
        if id(node) in magics:
            what, code = magics[id(node)]
            inner = _parse_cell(code) if code is not None else None
            if not what and inner is not None:
                what = _tree_flag(inner, package, exercises)[1]
            if what:
                return node.lineno, what
        elif not (isinstance(node, ast.Name) and id(node) in spared):
            what = _node_flag(node, package, exercises)
            if what:
                return getattr(node, "lineno", "?"), what
    return None, ""


def review_flags(nb_path: Path, released: nbformat.NotebookNode) -> list[str]:
    """Lines of the student's own cells (solution cells and cells they added) that reach into
    the grader's machinery, one note each (at most 10)."""
    nb, why = _read(nb_path)
    if nb is None:
        return []
    locked = {_gid(c) for c in released.cells if c.get("metadata", {}).get("nbgrader", {}).get("locked")}
    package = _package_aliases(nb)
    exercises = _exercise_names(released)
    flags: list[str] = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code" or _gid(cell) in locked:
            continue
        where = f"cell '{_gid(cell)}'" if _gid(cell) else f"cell {index + 1}"
        tree = _parse_cell(cell.get("source", ""))
        if tree is None:
            continue
        line, what = _tree_flag(tree, package, exercises)
        if what:
            flags.append(f"review: {where}, line {line}: {what}")
        if len(flags) >= 10:
            break
    return flags


__all__ = ["Submission", "find_submissions", "inspect_submission", "repair", "review_flags", "student_id", "split_name",
           "MAX_NOTEBOOK_BYTES", "MAX_FILE_BYTES", "strip_outputs"]
