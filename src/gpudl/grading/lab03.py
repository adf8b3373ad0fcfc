"""Checks for lab03_gemm_blocking: the visible cases (the hidden ones are the instructor's).

Each check runs the public cases of the released notebook; ``check.NAME(fn, hidden=True)`` runs
the hidden cases, drawn from the instructor's secret seed and judged by
``gpudl_instructor.checks.lab03`` with the same comparison (``_compare_NAME``), so both teach
alike. The expected answers come from independent oracles (NumPy's and torch's products, the
loop nest's own order of reads) or, for the traffic formula and the block size, from the values
stored when the lab was released (``gpudl.grading.expected``: ``expected("lab03")``); the course
edition holds no code that computes them. The question's verdict is the hidden check's: the
visible one only says whether the answer is well-formed.

Some checks watch *how* the answer is computed, not only what it is:

- the loop orders get matrices that log every element read, so the order of the loops shows;
- the blocked GEMM gets arrays that log every tile product (``@``), so a product of whole
  matrices, or of panels, shows;
- the Triton kernel writes into a view of C inside a larger buffer (a guard band around every
  matrix, and wide margins, all NaN): entries never written stay NaN, writes outside C change
  the guard band, and reads outside A and B bring NaN in;
- the batched GEMM gets arrays that refuse ``@`` and count per-matrix indexing ``A[b]``.

Those watching arrays, and the Triton kernel's buffer, live in the student's process: each is made
there by a ``@student_side`` adapter that calls the student's function and returns plain data
(C, the log of reads or tile products, what the kernel wrote where). The check judges.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from .. import gemm
from ..hardware import device
from . import (EPS, Case, GradingError, assert_close, assert_equal, check_cases, exercise, question, run_student,
               student_side, tolerance)
from .expected import expected

LAB = "lab03"
# The package's GEMMs that stay in the course edition: the graded code may not call them.
_GEMM_REFERENCES = [gemm.gemm_outer, gemm.matmul_triton]


# --- 1. loop orders ------------------------------------------------------------------------

class _Traced:
    """A matrix whose element reads are logged: ``A[i, k]`` or ``A[i][k]``, nothing else."""

    def __init__(self, values: np.ndarray, name: str, log: list):
        self._rows = values.tolist()
        self.shape = values.shape
        self._name = name
        self._log = log

    def _read(self, r: Any, c: Any) -> float:
        if not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in (r, c)):
            raise GradingError(f"{self._name}[{r!r}, {c!r}]: index one element at a time with integers, "
                               f"{self._name}[i, k]; slices would hide the loop order this exercise is about")
        self._log.append((self._name, int(r), int(c)))
        return self._rows[r][c]

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, tuple) and len(idx) == 2:
            return self._read(*idx)
        if isinstance(idx, (int, np.integer)):
            return _TracedRow(self, int(idx))
        raise GradingError(f"{self._name}[{idx!r}]: index one element at a time, {self._name}[i, k]")

    def __len__(self) -> int:
        return self.shape[0]

    def __iter__(self):
        raise GradingError(f"iterating over {self._name} hides the loop order: loop over indices and read "
                           f"{self._name}[i, k]")

    def __array__(self, *args: Any, **kwargs: Any):
        raise GradingError(f"{self._name} was converted to an array: this exercise is the three loops "
                           "themselves, one element at a time (no NumPy products)")


class _TracedRow:
    def __init__(self, matrix: _Traced, row: int):
        self._m, self._r = matrix, row

    def __getitem__(self, c: Any) -> float:
        return self._m._read(self._r, c)


def _dedup(seq: list) -> list:
    return [x for i, x in enumerate(seq) if i == 0 or x != seq[i - 1]]


def _expected_reads(m: int, n: int, k: int, order: str) -> tuple[list, list]:
    """The element reads of A and B of ``C[i, j] += A[i, k] * B[k, j]`` in loop order ``order``,
    consecutive repeats merged (reading A[i, k] once for a whole inner loop over j is fine)."""
    extent = {"i": m, "j": n, "k": k}
    a_reads, b_reads = [], []
    for idx in np.ndindex(*(extent[c] for c in order)):
        v = dict(zip(order, idx))
        a_reads.append(("A", v["i"], v["k"]))
        b_reads.append(("B", v["k"], v["j"]))
    return _dedup(a_reads), _dedup(b_reads)


def _plain_array(x: Any) -> Any:
    """(Student side) an ndarray subclass as a plain ndarray; anything else as it is."""
    return x.view(np.ndarray) if isinstance(x, np.ndarray) else x


@student_side
def _loop_order_traced(fn: Callable, A: np.ndarray, B: np.ndarray, order: str) -> dict[str, Any]:
    """(Student side) ``fn`` on matrices that log their element reads: C and the log."""
    log: list = []
    C = fn(_Traced(A, "A", log), _Traced(B, "B", log), order)
    return {"C": _plain_array(C), "log": log}


@exercise
def loop_order(fn: Callable) -> None:
    """``fn(A, B, order)`` -> C, reading ``A[i, k]`` and ``B[k, j]`` in the loop order asked."""
    __tracebackhide__ = True
    g = np.random.default_rng(3)
    cases = [(g.standard_normal((3, 2)), g.standard_normal((2, 4)), order) for order in gemm.LOOP_ORDERS]
    _compare_loop_order(fn, cases)


def _compare_loop_order(fn: Callable, cases: Sequence[tuple[np.ndarray, np.ndarray, str]]) -> None:
    """Each case (A, B, order): C against NumPy's product, and the reads against the loop nest's order."""
    __tracebackhide__ = True
    for A, B, order in cases:
        (m, k), n = A.shape, B.shape[1]
        where = f"gemm_loop_order(A {A.shape}, B {B.shape}, order={order!r})"
        seen = run_student(_loop_order_traced, fn, A, B, order, forbid=_GEMM_REFERENCES, label="the loop orders",
                           what=where)
        C, log = seen["C"], [tuple(x) for x in seen["log"]]
        try:
            assert_close(C, A @ B, k=k, name="C")
        except GradingError as exc:
            raise GradingError(f"{where}:\n{exc}") from None
        got = (_dedup([x for x in log if x[0] == "A"]), _dedup([x for x in log if x[0] == "B"]))
        if got != _expected_reads(m, n, k, order):
            if min(m, n, k) == 1:
                continue        # with a size of 1 several orders read alike; nothing to tell apart
            matches = [o for o in gemm.LOOP_ORDERS if _expected_reads(m, n, k, o) == got]
            if matches:
                hint = (f"your loops run in the order {matches[0]!r} (outermost first): the first letter of "
                        "`order` is the outermost loop, the last the innermost")
            elif not log:
                hint = "it read no element of A or B: read them as A[i, k] and B[k, j]"
            else:
                hint = (f"its first reads were {log[:6]}; each multiply-add should read A[i, k] and B[k, j] "
                        "with i, j, k from three loops nested in `order`")
            raise GradingError(f"{where} computes the right C, but not in that loop order: {hint}")


# --- 2. which loop order moves the least data --------------------------------------------------

def _orders(answer: Any, what: str) -> list[str]:
    items = [answer] if isinstance(answer, str) else list(answer) if isinstance(answer, (list, tuple, set)) else None
    if items is None:
        raise GradingError(f"{what} must be a loop order like 'ijk' (or a list of them), got {answer!r}")
    out = []
    for x in items:
        x = str(x).strip().lower()
        if x not in gemm.LOOP_ORDERS:
            raise GradingError(f"{what}: {x!r} is not one of the six loop orders {gemm.LOOP_ORDERS}")
        out.append(x)
    return sorted(set(out))


def traffic_answers(best: Any, worst: Any) -> tuple[str, list[str]]:
    """BEST_ORDER and WORST_ORDERS as one loop order and a sorted list of two, or a GradingError
    that says what is malformed (the hidden check judges the orders themselves)."""
    __tracebackhide__ = True
    best_l, worst_l = _orders(best, "BEST_ORDER"), _orders(worst, "WORST_ORDERS")
    if len(best_l) != 1:
        raise GradingError(f"BEST_ORDER is one loop order, got {best!r}")
    if len(worst_l) != 2:
        raise GradingError(f"WORST_ORDERS names two different loop orders, got {worst!r}")
    return best_l[0], worst_l


@exercise
@question
def traffic_question(best: Any, worst: Any) -> None:
    """BEST_ORDER: the order that moves the least data; WORST_ORDERS: the two that move the most.
    Here: whether the answers are well-formed; whether they are right is judged when graded."""
    __tracebackhide__ = True
    traffic_answers(best, worst)


# --- 3. blocked GEMM ---------------------------------------------------------------------------

_TILE_PRODUCTS: list[tuple[tuple[int, ...], tuple[int, ...]]] = []


class _TileWatch(np.ndarray):
    """An ndarray that logs the operand shapes of every ``@`` / ``np.matmul`` / ``np.dot`` it is in."""

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        plain = [x.view(np.ndarray) if isinstance(x, _TileWatch) else x for x in inputs]
        if ufunc is np.matmul and method == "__call__":
            _TILE_PRODUCTS.append(tuple(np.shape(x) for x in inputs[:2]))
        if out is not None:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, _TileWatch) else o for o in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.dot, np.matmul):
            _TILE_PRODUCTS.append(tuple(np.shape(x) for x in args[:2]))
        return super().__array_function__(func, types, args, kwargs)


@student_side
def _blocked_watched(fn: Callable, A: np.ndarray, B: np.ndarray, block: int) -> dict[str, Any]:
    """(Student side) ``fn`` on arrays that log their tile products: C and the products' shapes."""
    _TILE_PRODUCTS.clear()
    C = fn(A.view(_TileWatch), B.view(_TileWatch), block)
    products = list(_TILE_PRODUCTS)
    _TILE_PRODUCTS.clear()
    return {"C": _plain_array(C), "products": products}


@exercise
def blocked(fn: Callable) -> None:
    """``fn(A, B, block)`` -> A @ B, computed as products of tiles of at most block x block."""
    __tracebackhide__ = True
    g = np.random.default_rng(4)
    cases = [(g.standard_normal((m, k)), g.standard_normal((k, n)), b)
             for m, n, k, b in [(33, 45, 17, 16), (32, 32, 32, 8)]]
    _compare_blocked(fn, cases)


def _compare_blocked(fn: Callable, cases: Sequence[tuple[np.ndarray, np.ndarray, int]]) -> None:
    """Each case (A, B, block): C against NumPy's product, and one product of tiles of at most
    block x block per triple of tiles."""
    __tracebackhide__ = True
    for A, B, b in cases:
        (m, k), n = A.shape, B.shape[1]
        where = f"gemm_blocked(A {A.shape}, B {B.shape}, block={b})"
        seen = run_student(_blocked_watched, fn, A, B, b, forbid=_GEMM_REFERENCES, label="the blocked GEMM",
                           what=where)
        C = seen["C"]
        products = [(tuple(sa), tuple(sb)) for sa, sb in seen["products"]]
        try:
            assert_close(C, A @ B, k=k, name="C")
        except GradingError as exc:
            edge = " (the sizes are not multiples of the block: are the edge tiles included?)" \
                if m % b or n % b or k % b else ""
            raise GradingError(f"{where}{edge}:\n{exc}") from None
        want = math.ceil(m / b) * math.ceil(n / b) * math.ceil(k / b)
        big = [p for p in products if max(p[0] + p[1]) > b]
        if big:
            (sa, sb) = big[0]
            raise GradingError(f"{where}: a product multiplies a {sa} block by a {sb} block; with block={b} every "
                               f"tile is at most {b}x{b}: blocking means C_ij += A_ik @ B_kj over tiles")
        if len(products) != want:
            seen = ("no tile product (multiply tiles with `@` on slices of A and B, and do not convert A or B "
                    "with np.asarray first: the test watches the products through them)") if not products \
                else f"{len(products)} tile products"
            raise GradingError(f"{where}: we saw {seen}; tiles of {b} need ceil({m}/{b}) x ceil({n}/{b}) x "
                               f"ceil({k}/{b}) = {want}, one per triple (i, j, k) of tiles")


# --- 4. the traffic formula --------------------------------------------------------------------

@exercise
def traffic(fn: Callable) -> None:
    """``fn(n, block)`` -> words moved by blocked GEMM on n x n matrices."""
    __tracebackhide__ = True
    cases = [Case((64, 16), label="n=64, block=16 (N = 4 blocks per side)"), Case((48, 8)),
             Case((100, 30), label="n=100, block=30: N = ceil(100 / 30) = 4, the edge tiles are smaller")]
    _compare_traffic(fn, cases, expected(LAB))


def _compare_traffic(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    """The student's word counts against ``ref.blocked_traffic``, exactly."""
    __tracebackhide__ = True
    check_cases(fn, ref.blocked_traffic, cases, forbid=[gemm.naive_traffic] + _GEMM_REFERENCES,
                label="the traffic formula", rtol=1e-12, atol=0.0)


# --- 5. the block that fits -----------------------------------------------------------------------

@exercise
def block_size(fn: Callable) -> None:
    """``fn(fast_memory_words)`` -> the largest b with 3 b^2 <= fast_memory_words."""
    __tracebackhide__ = True
    cases = [Case((768,), label="768 words (three 16x16 tiles)"),
             Case((12288,), label="48 KiB of FP32 = 12288 words"),
             Case((767,), label="767 words: one word short of three 16x16 tiles (round down)")]
    _compare_block_size(fn, cases, expected(LAB))


def _compare_block_size(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    """The student's blocks against ``ref.optimal_block``, exactly."""
    __tracebackhide__ = True
    check_cases(fn, ref.optimal_block, cases, forbid=_GEMM_REFERENCES, label="the block size", compare=assert_equal,
                name="block", hint="three tiles (of A, B and C) must fit: 3 b^2 <= M, and b is a whole number of "
                "rows (round down)")


# --- 6. the Triton kernel --------------------------------------------------------------------------

def _torch():
    import torch

    return torch


# C starts out as this FP16 bit pattern: a *signalling* NaN. Arithmetic only ever produces quiet
# NaNs, so an entry that still holds it was never written; the guard bands hold ordinary NaN.
_UNWRITTEN = 0x7C2A


def _bits(t):
    torch = _torch()
    if t.element_size() != 2:
        raise TypeError(f"the Triton check works on 16-bit data, got {t.dtype}")
    return t.view(torch.int16)


class _Arena:
    """A, B and C as views into one NaN-filled buffer: each inside a guard band of ``guard`` rows
    and columns, with ``margin`` elements before and after everything."""

    def __init__(self, M: int, N: int, K: int, guard: int, dtype: Any, dev: str, b_transposed: bool):
        torch = _torch()
        self.M, self.N, self.K, self.G = M, N, K, guard
        margin = 2 * (max(M, N, K) + 2 * guard) ** 2 + 4096
        sizes = [(M, K), (N, K) if b_transposed else (K, N), (M, N)]
        offsets, pos = [], margin
        for r, c in sizes:
            offsets.append(pos)
            pos += (r + 2 * guard) * (c + 2 * guard)
        self.buffer = torch.full((pos + margin,), float("nan"), dtype=dtype, device=dev)
        self.a = self._view(offsets[0], M, K)
        b = self._view(offsets[1], *sizes[1])
        self.b = b.t() if b_transposed else b
        self.c = self._view(offsets[2], M, N)
        _bits(self.c).fill_(_UNWRITTEN)
        self.c_offset = offsets[2]
        self.inside_c = torch.zeros(self.buffer.numel(), dtype=torch.bool, device=dev)
        self._view_of(self.inside_c, offsets[2], M, N).fill_(True)

    def _view_of(self, buf, offset: int, rows: int, cols: int):
        g = self.G
        block = buf[offset: offset + (rows + 2 * g) * (cols + 2 * g)].view(rows + 2 * g, cols + 2 * g)
        return block[g:g + rows, g:g + cols]

    def _view(self, offset: int, rows: int, cols: int):
        return self._view_of(self.buffer, offset, rows, cols)

    def where(self, flat_index: int) -> str:
        """Where a buffer element is, relative to C."""
        rel = flat_index - self.c_offset
        width = self.N + 2 * self.G
        if 0 <= rel < (self.M + 2 * self.G) * width:
            r, c = divmod(rel, width)
            r, c = r - self.G, c - self.G
            side = ("below the last row" if r >= self.M else "above the first row" if r < 0 else
                    "right of the last column" if c >= self.N else "left of the first column")
            return f"C[{r}, {c}], {side} of the {self.M}x{self.N} C"
        return "outside C's guard band (far from C: a wrong stride or offset?)"


@exercise
def triton_matmul(fn: Callable) -> None:
    """``fn(a, b, c, block_m, block_n, block_k, group_m)`` writes a @ b into c (FP16, any strides)."""
    __tracebackhide__ = True
    cases = [dict(M=33, N=45, K=17, tiles=(16, 16, 16), group=2, data="normal", bt=False),
             dict(M=40, N=24, K=512, tiles=(16, 16, 32), group=3, data="uniform", bt=True)]
    if device() == "cuda":
        cases.append(dict(M=300, N=200, K=700, tiles=(64, 64, 32), group=4, data="normal", bt=False))
    _compare_triton_matmul(fn, cases, seed=5)


def _compare_triton_matmul(fn: Callable, cases: Sequence[dict[str, Any]], seed: int) -> None:
    """Each case (sizes, tiles, GROUP_M, the data's distribution, B column-major or not), its data
    drawn in turn from torch's generator seeded ``seed``: C against the exact products of the
    FP16 inputs summed in FP64, and what the kernel wrote (and did not) in and around C."""
    __tracebackhide__ = True
    torch = _torch()
    gen = torch.Generator().manual_seed(seed)
    for case in cases:
        M, N, K, (bm, bn, bk), gm = case["M"], case["N"], case["K"], case["tiles"], case["group"]
        if case["data"] == "uniform":
            a, b = torch.rand(M, K, generator=gen), torch.rand(K, N, generator=gen)
        else:
            a, b = torch.randn(M, K, generator=gen), torch.randn(K, N, generator=gen)
        a, b = a.half(), b.half()
        expected_c = a.double() @ b.double()          # exact products of the FP16 inputs
        layout = "B column-major (strides (1, K+guard))" if case["bt"] else "row-major views"
        where = (f"triton_matmul on ({M}, {K}) @ ({K}, {N}) fp16, {layout}, block_m={bm}, block_n={bn}, "
                 f"block_k={bk}, group_m={gm}")
        seen = run_student(_launch_triton_matmul, fn, a, b, (bm, bn, bk), gm, case["bt"], forbid=_GEMM_REFERENCES,
                           label="the Triton kernel", what=where)
        _inspect_triton(seen, expected_c, K, where)


@student_side
def _launch_triton_matmul(fn: Callable, a: Any, b: Any, tiles: tuple[int, int, int], group_m: int,
                          b_transposed: bool) -> dict[str, Any]:
    """(Student side) ``fn(a, b, c, *tiles, group_m)`` on views into a NaN-filled buffer on the
    lab's device (``_Arena``): what C holds afterwards, which of its entries were never written,
    what changed outside C, and whether ``fn`` returned a new tensor instead of ``c``."""
    torch = _torch()
    dev = device()
    (M, K), N = tuple(a.shape), int(b.shape[1])
    arena = _Arena(M, N, K, max(tiles), torch.float16, dev, b_transposed)
    arena.a.copy_(a.to(dev))
    arena.b.copy_(b.to(dev))
    before = arena.buffer.clone()
    with _no_package_kernel():
        returned = fn(arena.a, arena.b, arena.c, *tiles, group_m)
    if dev == "cuda":
        torch.cuda.synchronize()
    unwritten = (_bits(arena.c) == _UNWRITTEN).cpu()
    changed = (_bits(arena.buffer) != _bits(before)) & ~arena.inside_c
    first = int(torch.nonzero(changed)[0].item()) if changed.any() else -1
    return {"c": arena.c.double().cpu(), "unwritten": unwritten, "changed": int(changed.sum()),
            "first_changed": arena.where(first) if first >= 0 else "",
            "new_tensor": isinstance(returned, torch.Tensor) and returned.data_ptr() != arena.c.data_ptr()}


class _no_package_kernel:
    """Launching the package's kernels (``gpudl.gemm.matmul_kernel_persistent``, the TMA one, the
    autotuner), however imported, raises while a student's kernel runs."""

    def __enter__(self):
        def blocked(*_a, **_k):
            raise GradingError("your code launches one of gpudl.gemm's kernels, the package's own: write your "
                               "matmul_kernel and launch it")

        kernels = [gemm.matmul_kernel_persistent, gemm._autotuned, gemm.matmul_kernel_tma]
        self.saved = [(kern, kern.__dict__.get("run")) for kern in kernels if kern is not None]
        for kern, _ in self.saved:
            kern.run = blocked          # an instance attribute: found before the class's method
        return self

    def __exit__(self, *exc):
        for kern, previous in self.saved:
            if previous is None:
                del kern.run
            else:
                kern.run = previous
        return False


def _inspect_triton(seen: dict[str, Any], expected_c: Any, k: int, where: str) -> None:
    __tracebackhide__ = True
    torch = _torch()
    got, unwritten = seen["c"], seen["unwritten"]
    if unwritten.all():
        extra = ""
        if seen["new_tensor"]:
            extra = (": it seems to write a new tensor; write into the `c` it is given (the test passes a view "
                     "into a larger buffer, so c's strides are not (N, 1))")
        raise GradingError(f"{where}: nothing was written into c{extra}")
    if unwritten.any():
        rows, cols = torch.nonzero(unwritten.any(1)).flatten(), torch.nonzero(unwritten.any(0)).flatten()
        raise GradingError(f"{where}: {int(unwritten.sum())} entries of C were never written (rows "
                           f"{rows[0].item()}..{rows[-1].item()}, columns {cols[0].item()}..{cols[-1].item()}): does "
                           "the grid have cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs, and does each program map "
                           "to its own tile (the grouped order)?")
    if seen["changed"]:
        raise GradingError(f"{where}: {seen['changed']} elements outside C were overwritten, the first at "
                           f"{seen['first_changed']}: a tile that hangs over the edge must store with a mask "
                           "(offs_m < M) & (offs_n < N)")
    rtol_acc, atol_acc = tolerance("fp32", k)
    try:
        # Exact products, summed in FP32 (rtol_acc, atol_acc), then one rounding to FP16 (EPS / 2).
        assert_close(got, expected_c, rtol=EPS["fp16"] / 2 + rtol_acc, atol=atol_acc, name="C")
    except GradingError as exc:
        hint = ""
        if torch.isnan(got).any():
            hint = ("\nNaN in C: the test surrounds A and B with NaN, so a load past an edge (a missing mask on "
                    "the K loop, or a wrong stride) brings NaN in")
        elif k >= 256:
            hint = (f"\nK = {k} here: FP16 sums lose precision as they grow; accumulate in FP32 "
                    "(tl.zeros(..., dtype=tl.float32)) and convert to C's dtype only when storing")
        raise GradingError(f"{where}:\n{exc}{hint}") from None


# --- 7. batched GEMM -------------------------------------------------------------------------------

_PER_MATRIX: list[int] = [0]

# NumPy's products, refused on the check's arrays under any name (``from numpy import dot`` made
# before the check runs): the guard refuses them by name, but dot, inner and vdot are written in C,
# so a name bound earlier is not one the guard can watch
_NUMPY_PRODUCTS = {np.dot, np.inner, np.vdot, np.einsum, np.tensordot, np.linalg.multi_dot,
                   getattr(np.linalg, "vecdot", np.dot)}     # numpy.linalg.vecdot is NumPy 2's
# NumPy's product ufuncs (vecdot, matvec and vecmat are NumPy 2's), refused as @ is
_PRODUCT_UFUNCS = {f for f in (np.matmul, getattr(np, "vecdot", None), getattr(np, "matvec", None),
                               getattr(np, "vecmat", None)) if f is not None}


class _Batch(np.ndarray):
    """An ndarray that refuses matrix products and counts per-matrix indexing ``A[b]``."""

    def __array_function__(self, func, types, args, kwargs):
        if func in _NUMPY_PRODUCTS:
            raise GradingError(f"your code uses numpy.{func.__name__}: this exercise is to write the batched "
                               "product yourself, vectorised over the batch")
        return super().__array_function__(func, types, args, kwargs)

    def __getitem__(self, idx):
        first = idx[0] if isinstance(idx, tuple) and idx else idx
        if isinstance(first, (int, np.integer)) and self.ndim == 3:
            _PER_MATRIX[0] += 1
        return super().__getitem__(idx)

    def __iter__(self):
        if self.ndim == 3:
            _PER_MATRIX[0] += self.shape[0]
        return super().__iter__()

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if ufunc in _PRODUCT_UFUNCS:
            name = "@ (np.matmul)" if ufunc is np.matmul else f"np.{ufunc.__name__}"
            raise GradingError(f"your code uses {name}: this exercise is to write the batched product "
                               "yourself, vectorised over the batch")
        plain = [x.view(np.ndarray) if isinstance(x, _Batch) else x for x in inputs]
        if out is not None:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, _Batch) else o for o in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result.view(_Batch) if isinstance(result, np.ndarray) and result.ndim else result

    def dot(self, *args, **kwargs):
        raise GradingError("your code uses .dot: write the batched product yourself, vectorised over the batch")


# torch's products too, the single-matrix ones included: torch.vmap(torch.mm) is a batched product
_BATCHED_FORBIDDEN = ["numpy.einsum", "numpy.dot", "numpy.tensordot", "numpy.inner", "numpy.vdot",
                      "numpy.linalg.multi_dot", "torch.matmul", "torch.bmm", "torch.baddbmm", "torch.einsum",
                      "torch.mm", "torch.addmm", "torch.mv", "torch.dot", "torch.inner", "torch.tensordot",
                      "torch.linalg.multi_dot", "torch.nn.functional.linear", "torch.linalg.vecdot", "torch.vdot",
                      "torch.conv1d", "torch.conv2d", "gpudl.gemm.batched.gemm_batched",
                      "gpudl.gemm.batched.gemm_batched_loop"] + _GEMM_REFERENCES


@student_side
def _batched_watched(fn: Callable, A: np.ndarray, B: np.ndarray) -> dict[str, Any]:
    """(Student side) ``fn`` on arrays that refuse ``@`` and count ``A[b]``: C and the count."""
    _PER_MATRIX[0] = 0
    C = fn(A.view(_Batch), B.view(_Batch))
    return {"C": _plain_array(C), "per_matrix": _PER_MATRIX[0]}


@exercise
def batched(fn: Callable) -> None:
    """``fn(A, B)`` -> C with C[b] = A[b] @ B[b], one vectorised computation (no loop over b)."""
    __tracebackhide__ = True
    g = np.random.default_rng(6)
    cases = [(g.standard_normal((batch, m, k)), g.standard_normal((batch, k, n)))
             for batch, m, k, n in [(100, 4, 3, 5), (1000, 2, 2, 2)]]
    _compare_batched(fn, cases)


def _compare_batched(fn: Callable, cases: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
    """Each case (A, B): C against NumPy's batched product, with no product of one matrix at a time."""
    __tracebackhide__ = True
    for A, B in cases:
        batch, k = A.shape[0], A.shape[2]
        where = f"gemm_batched(A {A.shape}, B {B.shape})"
        seen = run_student(_batched_watched, fn, A, B, forbid=_BATCHED_FORBIDDEN, label="the batched GEMM",
                           what=where)
        C, per_matrix = seen["C"], int(seen["per_matrix"])
        try:
            assert_close(C, np.matmul(A, B), k=k, name="C")
        except GradingError as exc:
            raise GradingError(f"{where}:\n{exc}") from None
        if per_matrix >= batch // 2:
            raise GradingError(f"{where}: your code indexes one matrix at a time ({per_matrix} times A[b] or "
                               f"B[b]): that is the loop of small calls the batched routine avoids. Work on all "
                               "matrices at once: loop over k only, with A[:, :, k] and B[:, k, :]")
