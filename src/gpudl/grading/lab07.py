"""Checks for lab07_attention: the visible cases, judged by independent oracles.

``check.NAME(fn)`` runs the public cases shown in the released notebook. ``check.NAME(fn,
hidden=True)`` runs the hidden ones (cases drawn from the instructor's secret seed, plus edge
cases: lengths that are not multiples of the block, a single query, queries that may attend to
nothing, more queries than keys and the other way round): the grader draws and judges those
with the comparisons here (``_compare_NAME``), so a hidden case fails with the same message.

Where the visible cases' expected values come from:

``softmax``                         ``torch.softmax`` (float64)
``scaled_dot_product_attention``    ``torch.nn.functional.scaled_dot_product_attention`` (float64,
                                    the causal triangle and the mask combined into one boolean mask;
                                    torch gives a row that sees no key zeros too)
``multihead_self_attention``        ``torch.nn.functional.multi_head_attention_forward`` with the
                                    weights in torch's (out, in) layout
``online_softmax_merge``            the state of the union of the two blocks, computed from its
                                    scores with ``torch.logsumexp`` and ``torch.softmax`` (merging
                                    two blocks' states must give their union's)
``tiled_attention``                 torch's SDPA; its peak memory in the student's process
                                    (``tracemalloc``, and the largest storage a torch
                                    function returned: ``peak_traced_bytes``)
``attention_flops``                 stored at release (``expected/lab07``)
``memory_questions``                well-formed only (a ``@question``: the verdict is the grader's)
``attention_kernel``, ``kernel_speed``   torch's SDPA; on a GPU the speed beside torch's SDPA,
                                    timed in the student's process

The student's code may not call PyTorch's attention or softmax in any exercise (the guard
refuses them), so no course tool built on them can stand in for an answer.

Three checks observe the student's process itself, through ``@student_side`` adapters that
return plain data: the tiled attention's peak memory (``tracemalloc`` and torch's largest
storage, in the process that runs it), whether the kernel is a Triton kernel (and what it
computes launched as the lab's wrapper launches it), and, on a GPU, the kernel's speed beside
torch's SDPA, timed in the same process.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from ..attention import peak_traced_bytes
from ..hardware import device
from . import (Case, GradingError, assert_close, call_student, check_cases, exercise, question, run_student,
               student_side)
from .boundary import timed
from .expected import expected
from .judging import judge_ratio

LAB = "lab07"

# What every exercise must do without (a course tool built on them cannot score either), each refused
# under every name torch gives it (x.softmax, torch.special.softmax, x.log_softmax ...): softmin is
# softmax of -x; SciPy's are refused where SciPy is installed.
_LIBRARY_SOFTMAX = ["torch.softmax", "torch.nn.functional.softmax", "torch.log_softmax", "torch._softmax",
                    "torch._log_softmax", "torch.nn.functional.softmin", "torch.sparse.softmax",
                    "torch.sparse.log_softmax", "torch._masked_softmax", "torch._safe_softmax",
                    "scipy.special.softmax", "scipy.special.log_softmax"]
_TORCH_ATTENTION = ["torch.nn.functional.scaled_dot_product_attention", "torch._scaled_dot_product_attention_math",
                    "torch._scaled_dot_product_flash_attention", "torch._scaled_dot_product_efficient_attention",
                    "torch.nn.attention.flex_attention.flex_attention_hop", *_LIBRARY_SOFTMAX]


def _r(g: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return g.standard_normal(shape) * scale


def _torch(x: Any) -> Any:
    import torch

    return torch.from_numpy(np.array(x, dtype=np.float64))


# --- 1. a numerically stable softmax ----------------------------------------------------------

def _torch_softmax(x: Any, axis: int = -1) -> np.ndarray:
    import torch

    return torch.softmax(_torch(x), dim=axis).numpy()


def _compare_softmax(fn: Callable, cases: Sequence[Case], expect: Callable) -> None:
    __tracebackhide__ = True
    check_cases(fn, expect, cases, forbid=_TORCH_ATTENTION, label="softmax")


@exercise
def softmax(fn: Callable) -> None:
    """``fn(x, axis=-1)`` -> softmax of x along axis, stable for large scores."""
    __tracebackhide__ = True
    cases = [Case((np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.0, -1.0, 4.0]]),), label="a 3x3 matrix, axis=-1"),
             Case((np.array([1000.0, 1001.0, 1002.0]),), label="scores near 1000 (exp overflows to inf)"),
             Case((np.arange(12.0).reshape(3, 4),), {"axis": 0}, label="a 3x4 matrix along axis=0"),
             Case((np.array([[800.0, 801.0, 802.0], [-800.0, -799.0, -798.0]]),),
                  label="rows near +800 and -800 (one maximum per row: a global one underflows row 1)")]
    _compare_softmax(fn, cases, _torch_softmax)


# --- 2. scaled dot-product attention with masks -------------------------------------------------

def _torch_sdpa(q: Any, k: Any, v: Any, mask: Any = None, causal: bool = False) -> np.ndarray:
    import torch

    keep = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=bool))
    if causal:
        triangle = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        keep = triangle if keep is None else keep & triangle
    return torch.nn.functional.scaled_dot_product_attention(_torch(q), _torch(k), _torch(v), attn_mask=keep).numpy()


def _sdpa_mistakes(expect: Callable) -> Callable[..., dict[str, Callable[[], Any]]]:
    """The known mistakes of scaled dot-product attention on a case, each computed by ``expect``
    (the check's oracle) called with the mistaken arguments: the scores scaled by 1 or 1/d (q
    rescaled), the mask or the triangle left out, the triangle aligned at the bottom right or
    hiding the diagonal, and the mask applied to the weights after the softmax."""

    def mistakes(q: Any, k: Any, v: Any, mask: Any = None, causal: bool = False) -> dict[str, Callable[[], Any]]:
        q, k, v = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
        lq, lk, d = q.shape[-2], k.shape[-2], q.shape[-1]
        keep = np.ones((lq, lk), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        table = {"did you leave out the 1/sqrt(d)? The scores are q k^T / sqrt(d)":
                 lambda: expect(q * math.sqrt(d), k, v, mask=mask, causal=causal),
                 "did you divide the scores by d? Divide by sqrt(d)":
                 lambda: expect(q / math.sqrt(d), k, v, mask=mask, causal=causal)}
        if mask is not None:
            table["did you ignore the mask? It hides a key (score -inf) wherever it is False"] = \
                lambda: expect(q, k, v, causal=causal)
            table["did you read the mask upside down? True is where the query MAY attend (PyTorch's convention)"] = \
                lambda: expect(q, k, v, mask=~keep, causal=causal)
        if causal:
            table["did you ignore causal=True? Query i may attend to keys j <= i only"] = \
                lambda: expect(q, k, v, mask=mask, causal=False)
            table["did you hide the diagonal too? With causal=True query i sees keys j <= i, itself included"] = \
                lambda: expect(q, k, v, mask=keep & np.tril(np.ones((lq, lk), dtype=bool), -1))
            if lq != lk:
                table["did you align the causal triangle at the bottom right? The contract's is at the top left "
                      "(np.tril(np.ones((Lq, Lk))))"] = \
                    lambda: expect(q, k, v, mask=keep & np.tril(np.ones((lq, lk), dtype=bool), lk - lq))
        if mask is not None or causal:
            shown = keep & np.tril(np.ones((lq, lk), dtype=bool)) if causal else keep
            table["did you apply the mask after the softmax? Zeroed weights no longer sum to 1: hide the keys' "
                  "scores (-inf) before it"] = lambda: (_torch_softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(d))
                                                        * shown) @ v
        return table

    return mistakes


def _compare_sdpa(fn: Callable, cases: Sequence[Case], expect: Callable) -> None:
    __tracebackhide__ = True
    check_cases(fn, expect, cases, forbid=_TORCH_ATTENTION, label="scaled dot-product attention", k=64,
                mistakes=_sdpa_mistakes(expect))


@exercise
def scaled_dot_product_attention(fn: Callable) -> None:
    """``fn(q, k, v, mask=None, causal=False)`` -> (..., Lq, dv), NumPy."""
    __tracebackhide__ = True
    g = np.random.default_rng(7)
    mask = np.array([[True, True, False, True, False, True]] * 4)
    mask[2] = False
    cases = [Case((_r(g, 4, 8), _r(g, 6, 8), _r(g, 6, 3)), label="4 queries, 6 keys, d=8, dv=3"),
             Case((_r(g, 5, 4), _r(g, 5, 4), _r(g, 5, 4)), {"causal": True}, label="5 tokens, causal"),
             Case((_r(g, 4, 8), _r(g, 6, 8), _r(g, 6, 3)), {"mask": mask},
                  label="a mask that hides every key from query 2 (its output must be zeros)"),
             Case((_r(g, 4, 8), _r(g, 6, 8), _r(g, 6, 3)), {"causal": True},
                  label="causal with 4 queries and 6 keys (the triangle is aligned at the top left)"),
             Case((_r(g, 4, 8), _r(g, 6, 8), _r(g, 6, 3)), {"causal": True, "mask": mask},
                  label="causal and the mask together (a key is visible when both allow it)")]
    _compare_sdpa(fn, cases, _torch_sdpa)


# --- 3. multi-head self-attention ------------------------------------------------------------------

def _torch_mhsa(x: Any, w_q: Any, w_k: Any, w_v: Any, w_o: Any, heads: int, causal: bool = False) -> np.ndarray:
    """torch's multi-head attention with the lecture's weights (``Q = X W_Q``) in torch's layout;
    torch needs D_x = D_Q = D_V = D_out."""
    import torch

    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape[-2:]
    seq = _torch(x.reshape(-1, n, d)).transpose(0, 1)                           # torch's (N, batch, D)
    in_proj = torch.cat([_torch(w).T for w in (w_q, w_k, w_v)])                 # (3D, D), (out, in)
    hidden = torch.ones(n, n, dtype=torch.bool).triu(1) if causal else None     # torch: True = may NOT attend
    out, _ = torch.nn.functional.multi_head_attention_forward(
        seq, seq, seq, d, heads, in_proj, None, None, None, False, 0.0, _torch(w_o).T, None,
        training=False, need_weights=False, attn_mask=hidden)
    return out.transpose(0, 1).numpy().reshape(x.shape[:-1] + (out.shape[-1],))


_MHSA_FORBID = ["torch.nn.functional.multi_head_attention_forward", *_TORCH_ATTENTION]


def _mhsa_case(g: np.random.Generator, shape: tuple, d_q: int, d_v: int, d_out: int, heads: int, causal: bool,
               label: str = "") -> Case:
    d = shape[-1]
    w = [_r(g, d, d_q, scale=d ** -0.5), _r(g, d, d_q, scale=d ** -0.5), _r(g, d, d_v, scale=d ** -0.5),
         _r(g, d_v, d_out, scale=d_v ** -0.5)]
    return Case((_r(g, *shape), *w, heads), {"causal": causal}, label=label or
                f"x {shape}, W_Q {d, d_q}, W_V {d, d_v}, W_O {d_v, d_out}, {heads} heads, causal={causal}")


def _mhsa_mistakes(expect: Callable) -> Callable[..., dict[str, Callable[[], Any]]]:
    """The known mistake of multi-head self-attention that ``expect`` can give: causal not passed on."""

    def mistakes(x: Any, w_q: Any, w_k: Any, w_v: Any, w_o: Any, heads: int, causal: bool = False) -> dict:
        if not causal:
            return {}
        return {"did you pass causal on to your scaled_dot_product_attention? Your result is attention without "
                "the triangle": lambda: expect(x, w_q, w_k, w_v, w_o, heads, causal=False)}

    return mistakes


def _compare_mhsa(fn: Callable, cases: Sequence[Case], expect: Callable) -> None:
    __tracebackhide__ = True
    check_cases(fn, expect, cases, forbid=_MHSA_FORBID, label="multi-head self-attention", k=16,
                mistakes=_mhsa_mistakes(expect))


@exercise
def multihead_self_attention(fn: Callable) -> None:
    """``fn(x, w_q, w_k, w_v, w_o, heads, causal=False)`` -> (..., N, D_out), NumPy, ``Q = X W_Q``."""
    __tracebackhide__ = True
    g = np.random.default_rng(11)
    cases = [_mhsa_case(g, (5, 8), 8, 8, 8, 2, False), _mhsa_case(g, (5, 8), 8, 8, 8, 2, True)]
    _compare_mhsa(fn, cases, _torch_mhsa)


# --- 4. the online-softmax merge -------------------------------------------------------------------

def _torch_state(s: Any, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The online-softmax state (m, l, acc) of scores s (R, n) with values v (n, dv), from torch's
    logsumexp and softmax: ``l = exp(logsumexp(s) - m)``, ``acc = l * softmax(s) @ v``; a row
    with no visible score is (-inf, 0, 0)."""
    import torch

    s, v = _torch(s), _torch(v)
    m = s.amax(dim=-1)
    seen = torch.isfinite(m)
    l = torch.where(seen, torch.exp(torch.logsumexp(s, dim=-1) - m), torch.zeros_like(m))
    weights = torch.where(seen[..., None], torch.softmax(s, dim=-1), torch.zeros_like(s))
    return m.numpy(), l.numpy(), ((weights @ v) * l[..., None]).numpy()


def _split_scores(g: np.random.Generator, rows: int, sizes: tuple[int, int], dv: int, spread: float = 1.0,
                  hide: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Scores of ``rows`` rows over two blocks of keys of ``sizes``, and their values; ``hide``
    (rows, 2) hides a row's block (its scores -inf). -> (s, v, where block 2 starts)."""
    s = _r(g, rows, sum(sizes), scale=spread)
    v = _r(g, sum(sizes), dv)
    if hide is not None:
        for i, (a, b) in enumerate(((0, sizes[0]), (sizes[0], sum(sizes)))):
            s[hide[:, i], a:b] = -np.inf
    return s, v, sizes[0]


def _merge_case(s: np.ndarray, v: np.ndarray, cut: int, state: Callable, label: str) -> Case:
    """The merge's arguments: the states of the two blocks of keys (before and after ``cut``)."""
    return Case((*state(s[:, :cut], v[:cut]), *state(s[:, cut:], v[cut:])), label=label)


def _compare_states(actual: Any, expected: tuple) -> None:
    __tracebackhide__ = True
    if not isinstance(actual, (tuple, list)) or len(actual) != 3:
        raise GradingError(f"return the merged state as a tuple (m, l, acc), got {type(actual).__name__}"
                           + (f" of length {len(actual)}" if isinstance(actual, (tuple, list)) else ""))
    for got, want, name in zip(actual, expected, ("m (the running maximum)", "l (the running sum)",
                                                  "acc (the unnormalised output)")):
        assert_close(got, want, name=name, k=16)


def _compare_merge(fn: Callable, cases: Sequence[tuple[Case, tuple]]) -> None:
    """Each case with the merged state it must give."""
    __tracebackhide__ = True
    name = getattr(fn, "__name__", "your function")
    for case, want in cases:
        where = case.describe(name)
        got = call_student(fn, *case.args, forbid=_TORCH_ATTENTION, label="the online-softmax merge", what=where)
        try:
            _compare_states(got, want)
        except GradingError as exc:
            raise GradingError(f"{where}:\n{exc}") from None


@exercise
def online_softmax_merge(fn: Callable) -> None:
    """``fn(m_a, l_a, acc_a, m_b, l_b, acc_b)`` -> (m, l, acc)."""
    __tracebackhide__ = True
    g = np.random.default_rng(3)
    scores = [(_split_scores(g, 3, (4, 4), 2), "two halves of a 3 x 8 score matrix"),
              (_split_scores(g, 3, (4, 5), 2, hide=np.array([[False, False], [False, True], [True, True]])),
               "row 1's second block is fully masked, row 2 has no visible key at all")]
    _compare_merge(fn, [(_merge_case(s, v, cut, _torch_state, label), _torch_state(s, v))
                        for (s, v, cut), label in scores])


# --- 5. tiled attention in NumPy ---------------------------------------------------------------------

_TILED_FORBID = _TORCH_ATTENTION


def _compare_tiled(fn: Callable, cases: Sequence[Case], expect: Callable) -> None:
    """``expect(q, k, v, causal=...)``: the attention the tiles must add up to."""
    __tracebackhide__ = True

    def reference(q, k, v, block, causal=False):
        return expect(q, k, v, causal=causal)

    check_cases(fn, reference, cases, forbid=_TILED_FORBID, label="tiled attention", k=16)


@exercise
def tiled_attention(fn: Callable) -> None:
    """``fn(q, k, v, block, causal=False)`` -> (Lq, dv), without the (Lq, Lk) score matrix."""
    __tracebackhide__ = True
    g = np.random.default_rng(5)
    cases = [Case((_r(g, 37, 8), _r(g, 37, 8), _r(g, 37, 8), 16), label="L=37 (not a multiple of 16), block 16"),
             Case((_r(g, 37, 8), _r(g, 37, 8), _r(g, 37, 8), 16), {"causal": True}, label="L=37, block 16, causal"),
             Case((_r(g, 20, 8), _r(g, 12, 8), _r(g, 12, 8), 16), {"causal": True},
                  label="causal with 20 queries and 12 keys (the top-left triangle), block 16")]
    _compare_tiled(fn, cases, _torch_sdpa)
    _check_tiled_memory(fn, 1024, _torch_sdpa)


@student_side
def _traced_peak(fn: Callable, *args: Any) -> tuple[Any, int]:
    """(Student side) ``fn(*args)`` and the peak of the memory it allocated (``peak_traced_bytes``:
    NumPy's by tracemalloc, torch's by its largest storage)."""
    out, peak = peak_traced_bytes(fn, *args)
    return out, int(peak)


def _check_tiled_memory(fn: Callable, n: int, expect: Callable, d: int = 16, block: int = 64) -> None:
    """The tiled attention at L = ``n``: ``expect(q, k, v)`` its output, and a peak of memory far
    below the (n, n) scores."""
    __tracebackhide__ = True
    g = np.random.default_rng(n)
    q, k, v = _r(g, n, d), _r(g, n, d), _r(g, n, d)
    out, peak = run_student(_traced_peak, fn, q, k, v, block, forbid=_TILED_FORBID, label="tiled attention",
                            what=f"tiled_attention at L={n}")
    assert_close(out, expect(q, k, v), name=f"output at L={n}", k=d)
    scores = n * n * q.itemsize
    if peak > scores / 4:
        raise GradingError(f"at L={n}, d={d}, block={block} your tiled_attention allocated up to {peak / 2**20:.1f} MiB; "
                           f"the full score matrix is {scores / 2**20:.1f} MiB. A tiled version holds a "
                           f"({block}, {block}) tile of scores at a time (and the ({n}, {d}) output): does it build "
                           "the whole q @ k.T somewhere?")


# --- 6. FLOPs --------------------------------------------------------------------------------------------

def _compare_flops(fn: Callable, cases: Sequence[Case], ref: Any) -> None:
    """``ref.attention_flops(lq, lk, d, batch=batch * heads, causal=...)``: the expected count."""
    __tracebackhide__ = True

    def reference(batch, heads, lq, lk, d, causal=False):
        return ref.attention_flops(lq, lk, d, batch=batch * heads, causal=causal)

    check_cases(fn, reference, cases, label="attention FLOPs", rtol=1e-12, atol=0.0,
                hints={0.5: "a factor of 1/2: two products, and each multiply-add is 2 FLOPs"})


@exercise
def attention_flops(fn: Callable) -> None:
    """``fn(batch, heads, lq, lk, d, causal=False)`` -> FLOPs of Q K^T and P V (an int)."""
    __tracebackhide__ = True
    cases = [Case((8, 16, 4096, 4096, 64), label="the benchmark's shape: batch 8, 16 heads, L=4096, d=64"),
             Case((1, 1, 4, 4, 2), {"causal": True}, label="4 tokens, d=2, causal (10 visible pairs)"),
             Case((2, 3, 10, 4, 8), {"causal": True},
                  label="causal with 10 queries and 4 keys (the top-left triangle: 34 visible pairs per head)")]
    _compare_flops(fn, cases, expected(LAB))


# --- 7. memory questions ----------------------------------------------------------------------------------

def _growth_pair(growth: Any) -> tuple[float, float]:
    """MEMORY_GROWTH read as (naive, tiled) whole numbers, or a ``GradingError`` saying why not."""
    __tracebackhide__ = True
    try:
        naive, tiled = (float(x) for x in growth)
    except (TypeError, ValueError):
        raise GradingError(f"MEMORY_GROWTH must be a pair of numbers (naive, tiled), got {growth!r}") from None
    if not all(math.isfinite(x) and abs(x - round(x)) <= 0.01 and round(x) >= 1 for x in (naive, tiled)):
        raise GradingError(f"MEMORY_GROWTH = {growth!r}: give whole factors (1, 2, 3, ...), each at least 1, "
                           "read from your plot's slopes on log-log axes")
    return naive, tiled


@exercise
@question
def memory_questions(growth: Any, scores_gib: Any) -> None:
    """``growth``: (naive, tiled) factor of peak memory when L doubles; ``scores_gib``: GiB of the
    FP16 scores of batch 8 x 16 heads at L = 16384. Here: whether the answers are well formed
    (the grader judges them)."""
    __tracebackhide__ = True
    _growth_pair(growth)
    try:
        gib = float(scores_gib)
    except (TypeError, ValueError):
        raise GradingError(f"SCORES_GIB must be a number of GiB, got {scores_gib!r}") from None
    if not (math.isfinite(gib) and gib > 0):
        raise GradingError(f"SCORES_GIB must be a positive number of GiB, got {scores_gib!r}")


# --- 8. the Triton kernel ----------------------------------------------------------------------------------

def _is_triton_kernel(kernel: Any) -> bool:
    try:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction
    except ImportError:
        return False
    return isinstance(kernel, (JITFunction, InterpretedFunction))


def _torch_cases(g: np.random.Generator, shapes, dtype_name: str):
    import torch

    dtype = {"fp32": torch.float32, "fp16": torch.float16}[dtype_name]
    cases = []
    for z, lq, lk, d, causal in shapes:
        q, k, v = (torch.from_numpy(_r(g, z, n, d)).to(device(), dtype) for n in (lq, lk, lk))
        cases.append(Case((q, k, v), {"causal": causal},
                          label=f"q ({z}, {lq}, {d}), k and v ({z}, {lk}, {d}), {dtype_name}, causal={causal}"))
    return cases


def _torch_kernel_expected(q: Any, k: Any, v: Any, causal: bool = False) -> np.ndarray:
    """torch's SDPA in float64 on the CPU (``is_causal``: the top-left triangle)."""
    import torch

    t = [x.detach().double().cpu() for x in (q, k, v)]
    return torch.nn.functional.scaled_dot_product_attention(*t, is_causal=bool(causal)).numpy()


_KERNEL_FORBID = _TORCH_ATTENTION


@student_side
def _kernel_kind(kernel: Any) -> dict[str, Any]:
    """(Student side) whether ``kernel`` is a Triton kernel, and its type's name."""
    return {"triton": _is_triton_kernel(kernel), "type": type(kernel).__name__}


def _block() -> int:
    """The tiles the lab launches its kernel with: 64 x 64 on a GPU, 16 x 16 in the interpreter."""
    return 64 if device() == "cuda" else 16


@student_side
def _launch_kernel(kernel: Any, q: Any, k: Any, v: Any, causal: bool = False) -> Any:
    """(Student side) ``kernel`` launched on q, k, v (Z, L, d) as the lab's ``attention_triton``
    launches it: one program per (block of queries, batch entry), 16 x 16 tiles in the
    interpreter and 64 x 64 on a GPU."""
    import torch
    import triton

    block = _block()
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    z, lq, d = q.shape
    out = torch.empty_like(q)
    kernel[(triton.cdiv(lq, block), z)](q, k, v, out, lq, k.shape[1], 1.0 / math.sqrt(d),
                                        HEAD_DIM=d, BLOCK_M=block, BLOCK_N=block, CAUSAL=bool(causal))
    return out


_PADDING_KEYS = ("did you leave the padding keys visible? Keys past N_K load as zeros and score 0, which is not "
                 "\"absent\": give them a score of -inf")


def _kernel_mistakes(expect: Callable) -> Callable[..., dict[str, Callable[[], Any]]]:
    """The known mistakes of the attention kernel on a case of torch tensors (Z, L, d), each computed
    by ``expect`` on changed inputs: padding keys left visible (the keys and values padded with
    zeros up to a whole number of the lab's key blocks) and the scores left unscaled (q times
    sqrt(d))."""

    def mistakes(q: Any, k: Any, v: Any, causal: bool = False) -> dict[str, Callable[[], Any]]:
        import torch

        lk, d = k.shape[-2], q.shape[-1]
        table: dict[str, Callable[[], Any]] = {}
        extra = -lk % _block()
        if extra and not causal:             # with the triangle, a padding key (j >= N_K > i) is hidden anyway
            pad = (0, 0, 0, extra)
            table[_PADDING_KEYS] = lambda: expect(q, torch.nn.functional.pad(k, pad), torch.nn.functional.pad(v, pad))
        table["did you leave out the scale? The scores are (q k^T) * scale, scale = 1/sqrt(d)"] = \
            lambda: expect(q * math.sqrt(d), k, v, causal=causal)
        return table

    return mistakes


def _compare_kernel(wrapper: Callable, kernel: Any, cases: Sequence[Case], expect: Callable) -> None:
    """The kernel is a Triton kernel; the wrapper's output on every case; and the kernel's own, launched
    here as the lab's wrapper launches it, on the first causal case."""
    __tracebackhide__ = True
    kind = run_student(_kernel_kind, kernel, label="the attention kernel", what="attention_kernel")
    if not kind["triton"]:
        raise GradingError(f"attention_kernel must be a Triton kernel (decorated with @triton.jit), "
                           f"got {kind['type']}")
    precision = "tf32" if device() == "cuda" else "fp32"     # tl.dot multiplies FP32 in TF32 on a GPU
    mistakes = _kernel_mistakes(expect)
    check_cases(wrapper, expect, cases, forbid=_KERNEL_FORBID, label="the attention kernel", dtype=precision, k=16,
                mistakes=mistakes)
    case = next((c for c in cases if c.kwargs.get("causal")), cases[0])
    where = f"attention_kernel launched as attention_triton launches it, on {case.label}"
    out = run_student(_launch_kernel, kernel, *case.args, **case.kwargs, forbid=_KERNEL_FORBID,
                      label="the attention kernel", what=where)
    try:
        assert_close(out, expect(*case.args, **case.kwargs), dtype=precision, k=16,
                     mistakes=mistakes(*case.args, **case.kwargs))
    except GradingError as exc:
        raise GradingError(f"{where}:\n{exc}") from None


@exercise
def attention_kernel(wrapper: Callable, kernel: Any) -> None:
    """``kernel`` is the student's @triton.jit kernel; ``wrapper(q, k, v, causal=False)`` launches it
    on (Z, L, d) torch tensors."""
    __tracebackhide__ = True
    g = np.random.default_rng(1)
    n = 2 * _block() + 5                 # three key blocks, the last one partial: 37 in the interpreter, 133 on a GPU
    cases = _torch_cases(g, [(2, n, n, 16, False), (2, n, n, 16, True)], "fp32")
    _compare_kernel(wrapper, kernel, cases, _torch_kernel_expected)


# The speed asked of the student's kernel in FP16 at batch 8 x 16 heads, L = 4096, d = 64 (not causal),
# as a fraction of torch's SDPA (a FlashAttention kernel) timed beside it. The lab's plain kernel with
# 64 x 64 tiles runs at about 0.7x of SDPA there on an H100 and an H200; half of that passes. A median
# below half of that again is a kernel that misses the point (no tiling, K and V reloaded); in between,
# the measurement is inconclusive (a busy device): made again, SPEED_ATTEMPTS times at most, then passed.
SPEED_VS_SDPA = 0.35
SPEED_SURE = SPEED_VS_SDPA / 2
SPEED_ROUNDS, SPEED_ATTEMPTS = 3, 3


@exercise
def kernel_speed(wrapper: Callable) -> None:
    """On a GPU: the student's kernel in FP16 against torch's SDPA, timed in turns in the same run;
    the median of the rounds' speed ratios at least ``SPEED_VS_SDPA`` (``judge_ratio``). On a CPU:
    FP16 correctness only."""
    __tracebackhide__ = True
    import torch

    g = np.random.default_rng(2)
    if device() != "cuda":
        cases = _torch_cases(g, [(2, 37, 37, 16, False), (2, 37, 37, 16, True)], "fp16")
        check_cases(wrapper, _torch_kernel_expected, cases, forbid=_KERNEL_FORBID,
                    label="the attention kernel in FP16", dtype="fp16", k=16,
                    mistakes=_kernel_mistakes(_torch_kernel_expected))
        return
    z, n, d = 8 * 16, 4096, 64
    gen = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn(z, n, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    # (1, Z, L, d) takes SDPA's flash path; 3-D inputs take its math path, which materializes the
    # 128 x 4096 x 4096 scores (8 GiB): with a class sharing the GPU, that ran the GPU out of memory.
    expected_out = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]

    def timed_rounds() -> dict[str, Any]:
        # torch's SDPA is not forbidden here: the adapter times it beside the wrapper (the lab's own)
        with timed("gpu"):
            seen = run_student(_time_kernel, wrapper, q, k, v, SPEED_ROUNDS,
                               forbid=_LIBRARY_SOFTMAX,
                               label="the attention kernel", what="attention_triton")
        assert_close(seen["out"].float(), expected_out.float(), dtype="fp16", k=d,
                     name=f"output at ({z}, {n}, {d}) FP16")
        return seen

    _judge_speed(timed_rounds)


def _judge_speed(timed_rounds: Callable[[], dict[str, Any]]) -> None:
    """Judge the kernel's speed (``judge_ratio``) from batches of rounds: ``timed_rounds()`` gives
    {"sdpa": [...], "mine": [...]}, the medians of ``SPEED_ROUNDS`` rounds timed in turns under the
    exclusive lease; each round is (SDPA's time, the kernel's), its ratio the kernel's speed
    relative to SDPA's."""
    __tracebackhide__ = True
    rounds: list[tuple[float, float]] = []

    def one_round() -> tuple[float, float]:
        if not rounds:
            seen = timed_rounds()
            rounds.extend(zip(seen["sdpa"], seen["mine"]))
        return rounds.pop()

    def fail(sdpa: float, mine: float) -> None:
        raise GradingError(f"your kernel takes {mine * 1e3:.2f} ms, {mine / sdpa:.1f}x the {sdpa * 1e3:.2f} ms of "
                           f"torch's scaled_dot_product_attention (the median of {SPEED_ROUNDS} rounds timed in "
                           f"turns); it needs at least {SPEED_VS_SDPA:.2f}x its speed, "
                           f"{sdpa / SPEED_VS_SDPA * 1e3:.2f} ms. Does it load K and V once per key block, use tl.dot "
                           "for both products, and skip the key blocks right of the diagonal when causal?")

    judge_ratio(one_round, passes=lambda r: r >= SPEED_VS_SDPA, fails=lambda r: r < SPEED_SURE, fail=fail,
                rounds=SPEED_ROUNDS, attempts=SPEED_ATTEMPTS)


@student_side
def _time_kernel(wrapper: Callable, q: Any, k: Any, v: Any, rounds: int) -> dict[str, Any]:
    """(Student side, on a GPU) the student's wrapper's output on q, k, v, and ``rounds`` medians
    of it and of torch's SDPA, timed in turns (each round in the opposite order to the one before),
    so that a clock or a neighbour that changes during the check moves both alike."""
    import torch

    from ..bench import time_cuda

    q4, k4, v4 = q[None], k[None], v[None]      # (1, Z, L, d): 3-D inputs would take SDPA's slow math path
    calls = {"mine": (lambda: wrapper(q, k, v), "your kernel"),
             "sdpa": (lambda: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4),
                      "torch's scaled_dot_product_attention")}
    times: dict[str, list[float]] = {"mine": [], "sdpa": []}
    with torch.no_grad():
        out = wrapper(q, k, v)
        for r in range(rounds):
            for name in (("mine", "sdpa") if r % 2 == 0 else ("sdpa", "mine")):
                fn, what = calls[name]
                times[name].append(float(time_cuda(fn, budget_s=0.2, what=what).median))
    return {"out": out, **times}
