"""Checks for lab07_attention.

Each check takes the student's function and ``hidden=False`` (the public cases shown in the
released notebook) or ``hidden=True`` (cases drawn from the instructor's secret seed, plus
edge cases: lengths that are not multiples of the block, a single query, queries that may
attend to nothing, more queries than keys and the other way round). Reference answers come
from ``gpudl.attention``, which the student's code may not call while it is checked.

Three checks observe the student's process itself, through ``@student_side`` adapters that
return plain data: the tiled attention's peak memory (``tracemalloc`` in the process that runs
it), whether the kernel is a Triton kernel, and, on a GPU, the kernel's speed beside the
package's plain kernel, timed in the same process.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import attention
from ..hardware import device
from . import (Case, GradingError, answer_digest, assert_close, check_cases, exercise, rng, run_student,
               student_side)

LAB = "lab07"

# What the NumPy exercises must do without.
_TORCH_ATTENTION = ["torch.nn.functional.scaled_dot_product_attention", "torch.softmax",
                    "torch.nn.functional.softmax"]


def _r(g: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return g.standard_normal(shape) * scale


# --- 1. a numerically stable softmax ----------------------------------------------------------

@exercise
def softmax(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, axis=-1)`` -> softmax of x along axis, stable for large scores."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [0.0, -1.0, 4.0]]),), label="a 3x3 matrix, axis=-1"),
                 Case((np.array([1000.0, 1001.0, 1002.0]),), label="scores near 1000 (exp overflows to inf)"),
                 Case((np.arange(12.0).reshape(3, 4),), {"axis": 0}, label="a 3x4 matrix along axis=0"),
                 Case((np.array([[800.0, 801.0, 802.0], [-800.0, -799.0, -798.0]]),),
                      label="rows near +800 and -800 (one maximum per row: a global one underflows row 1)")]
    else:
        g = rng(f"{LAB}.softmax")
        cases = []
        for shape in ((5, 5), (3, 4, 6), (2, 7), (4, 3, 3)):
            x = _r(g, *shape, scale=3.0)
            for axis in {int(g.integers(-len(shape), len(shape))), -1, 0}:
                cases.append(Case((x,), {"axis": axis}))
        offsets = np.array([[800.0], [-800.0], [0.0], [300.0]])
        cases.append(Case((_r(g, 4, 6) + offsets,), label="rows near +800, -800, 0 and 300 (one max per row!)"))
        cases.append(Case((_r(g, 6, 1),), {"axis": -1}, label="a (6, 1) matrix: one entry per row"))
    check_cases(fn, attention.softmax, cases, forbid=[attention.softmax, *_TORCH_ATTENTION], label="softmax")


# --- 2. scaled dot-product attention with masks -------------------------------------------------

def _sdpa_ref(q, k, v, mask=None, causal=False):
    return attention.scaled_dot_product_attention(q, k, v, mask=mask, causal=causal)


@exercise
def scaled_dot_product_attention(fn: Callable, hidden: bool = False) -> None:
    """``fn(q, k, v, mask=None, causal=False)`` -> (..., Lq, dv), NumPy."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.sdpa") if hidden else np.random.default_rng(7)
    if not hidden:
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
    else:
        b, h = int(g.integers(1, 4)), int(g.integers(1, 4))
        lq, lk, d = int(g.integers(2, 12)), int(g.integers(2, 12)), int(g.choice([16, 32, 64]))
        mask = g.random((b, h, lq, lk)) < 0.6
        mask[0, 0, int(g.integers(lq))] = False
        cases = [Case((_r(g, b, h, lq, d), _r(g, b, h, lk, d), _r(g, b, h, lk, 5)), label=f"batch ({b}, {h}), d={d}"),
                 Case((_r(g, b, h, lq, d), _r(g, b, h, lk, d), _r(g, b, h, lk, 5)), {"mask": mask},
                      label="a random mask with a fully masked row"),
                 Case((_r(g, 6, 8), _r(g, 9, 8), _r(g, 9, 4)), {"causal": True}, label="causal, 6 queries, 9 keys"),
                 Case((_r(g, 9, 8), _r(g, 6, 8), _r(g, 6, 4)), {"causal": True}, label="causal, 9 queries, 6 keys"),
                 Case((_r(g, 7, 8), _r(g, 7, 8), _r(g, 7, 4)), {"causal": True, "mask": g.random((7, 7)) < 0.7},
                      label="causal and a mask together"),
                 Case((_r(g, 1, 16), _r(g, 5, 16), _r(g, 5, 2)), {"causal": True}, label="a single query, causal")]
    check_cases(fn, _sdpa_ref, cases, forbid=[attention.scaled_dot_product_attention, attention.softmax,
                                              attention.flash_attention, *_TORCH_ATTENTION],
                label="scaled dot-product attention", k=64)


# --- 3. multi-head self-attention ------------------------------------------------------------------

def _mhsa_ref(x, w_q, w_k, w_v, w_o, heads, causal=False):
    return attention.multihead_self_attention(x, w_q, w_k, w_v, w_o, heads, causal=causal)


@exercise
def multihead_self_attention(fn: Callable, hidden: bool = False) -> None:
    """``fn(x, w_q, w_k, w_v, w_o, heads, causal=False)`` -> (..., N, D_out), NumPy, ``Q = X W_Q``."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.mhsa") if hidden else np.random.default_rng(11)

    def case(shape, d_q, d_v, d_out, heads, causal, label=""):
        d = shape[-1]
        w = [_r(g, d, d_q, scale=d ** -0.5), _r(g, d, d_q, scale=d ** -0.5), _r(g, d, d_v, scale=d ** -0.5),
             _r(g, d_v, d_out, scale=d_v ** -0.5)]
        return Case((_r(g, *shape), *w, heads), {"causal": causal}, label=label or
                    f"x {shape}, W_Q {d, d_q}, W_V {d, d_v}, W_O {d_v, d_out}, {heads} heads, causal={causal}")

    if not hidden:
        cases = [case((5, 8), 8, 8, 8, 2, False), case((5, 8), 8, 8, 8, 2, True)]
    else:
        cases = [case((2, 7, 12), 12, 12, 12, int(g.choice([2, 3, 4])), False),
                 case((3, 6, 8), 8, 8, 8, 4, True),
                 case((9, 6), 8, 4, 5, 2, bool(g.integers(0, 2)), label="D_x=6, D_Q=8, D_V=4, D_out=5, 2 heads"),
                 case((4, 8), 8, 8, 8, 1, False, label="a single head"),
                 case((2, 1, 8), 8, 8, 8, 2, True, label="one token")]
    check_cases(fn, _mhsa_ref, cases, forbid=[attention.multihead_self_attention, attention.split_heads,
                                              "torch.nn.functional.multi_head_attention_forward", *_TORCH_ATTENTION],
                label="multi-head self-attention", k=16)


# --- 4. the online-softmax merge -------------------------------------------------------------------

def _compare_states(actual: Any, expected: tuple) -> None:
    __tracebackhide__ = True
    if not isinstance(actual, (tuple, list)) or len(actual) != 3:
        raise GradingError(f"return the merged state as a tuple (m, l, acc), got {type(actual).__name__}"
                           + (f" of length {len(actual)}" if isinstance(actual, (tuple, list)) else ""))
    for got, want, name in zip(actual, expected, ("m (the running maximum)", "l (the running sum)",
                                                  "acc (the unnormalised output)")):
        assert_close(got, want, name=name, k=16)


def _states(g, rows: int, sizes: tuple[int, int], dv: int, spread: float = 1.0, hide=None):
    """The states of two blocks of one score matrix; ``hide`` (rows, blocks) hides some rows' blocks."""
    s = _r(g, rows, sum(sizes), scale=spread)
    v = _r(g, sum(sizes), dv)
    out = []
    for i, (a, b) in enumerate(((0, sizes[0]), (sizes[0], sum(sizes)))):
        block = s[:, a:b].copy()
        if hide is not None:
            block[hide[:, i]] = -np.inf
        out.extend(attention.softmax_block_state(block, v[a:b]))
    return tuple(out)


@exercise
def online_softmax_merge(fn: Callable, hidden: bool = False) -> None:
    """``fn(m_a, l_a, acc_a, m_b, l_b, acc_b)`` -> (m, l, acc)."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.merge") if hidden else np.random.default_rng(3)
    if not hidden:
        cases = [Case(_states(g, 3, (4, 4), 2), label="two halves of a 3 x 8 score matrix"),
                 Case(_states(g, 3, (4, 5), 2, hide=np.array([[False, False], [False, True], [True, True]])),
                      label="row 1's second block is fully masked, row 2 has no visible key at all")]
    else:
        big = np.zeros((4, 2), bool)
        big[int(g.integers(4)), int(g.integers(2))] = True
        cases = [Case(_states(g, 4, (int(g.integers(1, 9)), int(g.integers(1, 9))), 3, spread=30.0),
                      label="scores spread over +-100 (exp(m_a - m_b) is tiny or huge)"),
                 Case(_states(g, 4, (5, 3), 3, hide=big), label="one row has a fully masked block"),
                 Case(_states(g, 1, (1, 1), 1), label="one row, blocks of one key"),
                 Case(_states(g, 2, (3, 3), 2, hide=np.array([[True, True], [True, False]])),
                      label="row 0 masked in both blocks: it must stay (-inf, 0, 0), with no NaN")]
    check_cases(fn, attention.online_softmax_merge, cases, forbid=[attention.online_softmax_merge],
                label="the online-softmax merge", compare=_compare_states)


# --- 5. tiled attention in NumPy ---------------------------------------------------------------------

def _tiled_ref(q, k, v, block, causal=False):
    return attention.scaled_dot_product_attention(q, k, v, causal=causal)


_TILED_FORBID = [attention.flash_attention, attention.scaled_dot_product_attention, attention.softmax,
                 attention.online_softmax_merge, attention.softmax_block_state]


@exercise
def tiled_attention(fn: Callable, hidden: bool = False) -> None:
    """``fn(q, k, v, block, causal=False)`` -> (Lq, dv), without the (Lq, Lk) score matrix."""
    __tracebackhide__ = True
    g = rng(f"{LAB}.tiled") if hidden else np.random.default_rng(5)
    if not hidden:
        cases = [Case((_r(g, 37, 8), _r(g, 37, 8), _r(g, 37, 8), 16), label="L=37 (not a multiple of 16), block 16"),
                 Case((_r(g, 37, 8), _r(g, 37, 8), _r(g, 37, 8), 16), {"causal": True}, label="L=37, block 16, causal"),
                 Case((_r(g, 20, 8), _r(g, 12, 8), _r(g, 12, 8), 16), {"causal": True},
                      label="causal with 20 queries and 12 keys (the top-left triangle), block 16")]
    else:
        lq, lk = int(g.integers(20, 60)), int(g.integers(20, 60))
        cases = [Case((_r(g, lq, 8), _r(g, lk, 8), _r(g, lk, 5), int(g.choice([8, 16]))), label=f"Lq={lq}, Lk={lk}"),
                 Case((_r(g, lq, 8), _r(g, lk, 8), _r(g, lk, 5), 16), {"causal": True}, label=f"causal, Lq={lq}, Lk={lk}"),
                 Case((_r(g, 48, 8), _r(g, 48, 8), _r(g, 48, 8), 16), {"causal": True}, label="L=48, block 16, causal"),
                 Case((_r(g, 5, 4), _r(g, 9, 4), _r(g, 9, 4), 16), label="fewer keys than one block"),
                 Case((_r(g, 7, 4), _r(g, 7, 4), _r(g, 7, 4), 1), {"causal": True}, label="block 1, causal"),
                 Case((_r(g, 12, 8), _r(g, 8, 8), _r(g, 8, 8), 4), {"causal": True}, label="causal, 12 queries, 8 keys")]
    check_cases(fn, _tiled_ref, cases, forbid=_TILED_FORBID, label="tiled attention", k=16)
    _check_tiled_memory(fn, n=2048 if hidden else 1024)


@student_side
def _traced_peak(fn: Callable, *args: Any) -> tuple[Any, int]:
    """(Student side) ``fn(*args)`` and the peak of the memory it allocated (``tracemalloc``)."""
    out, peak = attention.peak_traced_bytes(fn, *args)
    return out, int(peak)


def _check_tiled_memory(fn: Callable, n: int, d: int = 16, block: int = 64) -> None:
    __tracebackhide__ = True
    g = np.random.default_rng(n)
    q, k, v = _r(g, n, d), _r(g, n, d), _r(g, n, d)
    out, peak = run_student(_traced_peak, fn, q, k, v, block, forbid=_TILED_FORBID, label="tiled attention",
                            what=f"tiled_attention at L={n}")
    assert_close(out, attention.flash_attention(q, k, v, block), name=f"output at L={n}", k=d)
    scores = n * n * q.itemsize
    if peak > scores / 4:
        raise GradingError(f"at L={n}, d={d}, block={block} your tiled_attention allocated up to {peak / 2**20:.1f} MiB; "
                           f"the full score matrix is {scores / 2**20:.1f} MiB. A tiled version holds a "
                           f"({block}, {block}) tile of scores at a time (and the ({n}, {d}) output): does it build "
                           "the whole q @ k.T somewhere?")


# --- 6. FLOPs --------------------------------------------------------------------------------------------

@exercise
def attention_flops(fn: Callable, hidden: bool = False) -> None:
    """``fn(batch, heads, lq, lk, d, causal=False)`` -> FLOPs of Q K^T and P V (an int)."""
    __tracebackhide__ = True
    if not hidden:
        cases = [Case((8, 16, 4096, 4096, 64), label="the benchmark's shape: batch 8, 16 heads, L=4096, d=64"),
                 Case((1, 1, 4, 4, 2), {"causal": True}, label="4 tokens, d=2, causal (10 visible pairs)"),
                 Case((2, 3, 10, 4, 8), {"causal": True},
                      label="causal with 10 queries and 4 keys (the top-left triangle: 34 visible pairs per head)")]
    else:
        g = rng(f"{LAB}.flops")
        cases = [Case(tuple(int(x) for x in (g.integers(1, 9), g.integers(1, 33), g.integers(1, 3000),
                                             g.integers(1, 3000), g.choice([32, 64, 128]))), {"causal": c})
                 for c in (False, True, True)]
        cases += [Case((2, 3, 10, 4, 8), {"causal": True}, label="causal with more queries than keys"),
                  Case((1, 1, 1, 1, 1), {"causal": True})]

    def ref(batch, heads, lq, lk, d, causal=False):
        return attention.attention_flops(lq, lk, d, batch=batch * heads, causal=causal)

    check_cases(fn, ref, cases, forbid=[attention.attention_flops], label="attention FLOPs", rtol=1e-12, atol=0.0,
                hints={0.5: "a factor of 1/2: two products, and each multiply-add is 2 FLOPs"})


# --- 7. memory questions ----------------------------------------------------------------------------------

_GROWTH = "c3c3cbe5a18996e66f5051ccc9895c4c"




@exercise
def memory_questions(growth: Any, scores_gib: Any) -> None:
    """``growth``: (naive, tiled) factor of peak memory when L doubles; ``scores_gib``: GiB of the
    FP16 scores of batch 8 x 16 heads at L = 16384."""
    __tracebackhide__ = True
    try:
        naive, tiled = (float(x) for x in growth)
    except (TypeError, ValueError):
        raise GradingError(f"MEMORY_GROWTH must be a pair of numbers (naive, tiled), got {growth!r}") from None
    if answer_digest("lab07", f"{round(naive)},{round(tiled)}") != _GROWTH or abs(naive - round(naive)) > 0.01 or abs(tiled - round(tiled)) > 0.01:
        raise GradingError(f"MEMORY_GROWTH = {growth!r} is not it. Look at your plot's slopes on log-log axes: "
                           "a line of slope p means memory grows like L^p, so doubling L multiplies it by 2^p.")
    expected = 8 * 16 * 16384 * 16384 * 2 / 2**30
    assert_close(scores_gib, expected, rtol=1e-3, atol=0.0, name="SCORES_GIB",
                 hints={2**30 / 1e9: "a factor of 1.07: GiB is 2^30 bytes, GB is 10^9",
                        1e9 / 2**30: "a factor of 0.93: GiB is 2^30 bytes, GB is 10^9",
                        2.0: "a factor of 2: FP16 is 2 bytes per score", 0.5: "a factor of 1/2: FP16 is 2 bytes per score"})


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


def _kernel_ref(q, k, v, causal=False):
    np_args = [t.detach().double().cpu().numpy() for t in (q, k, v)]
    return attention.scaled_dot_product_attention(*np_args, causal=causal)


_KERNEL_FORBID = [attention.flash_attention_triton, attention.flash_attention_triton_plain,
                  attention.scaled_dot_product_attention, attention.flash_attention]


@student_side
def _kernel_kind(kernel: Any) -> dict[str, Any]:
    """(Student side) whether ``kernel`` is a Triton kernel, and its type's name."""
    return {"triton": _is_triton_kernel(kernel), "type": type(kernel).__name__}


@exercise
def attention_kernel(wrapper: Callable, kernel: Any, hidden: bool = False) -> None:
    """``kernel`` is the student's @triton.jit kernel; ``wrapper(q, k, v, causal=False)`` launches it
    on (Z, L, d) torch tensors."""
    __tracebackhide__ = True
    kind = run_student(_kernel_kind, kernel, label="the attention kernel", what="attention_kernel")
    if not kind["triton"]:
        raise GradingError(f"attention_kernel must be a Triton kernel (decorated with @triton.jit), "
                           f"got {kind['type']}")
    if not hidden:
        shapes = [(2, 37, 37, 16, False), (2, 37, 37, 16, True)]
        g = np.random.default_rng(1)
    else:
        g = rng(f"{LAB}.kernel")
        n = int(g.integers(17, 48))
        shapes = [(3, n, n, 16, True), (1, 16, 16, 32, True), (2, 20, 45, 16, True), (2, 45, 20, 16, True),
                  (1, 1, 1, 16, False), (2, n, int(g.integers(17, 48)), 16, False)]
    precision = "tf32" if device() == "cuda" else "fp32"     # tl.dot multiplies FP32 in TF32 on a GPU
    check_cases(wrapper, _kernel_ref, _torch_cases(g, shapes, "fp32"), forbid=_KERNEL_FORBID,
                label="the attention kernel", dtype=precision, k=16)


@exercise
def kernel_speed(wrapper: Callable) -> None:
    """On a GPU: the student's kernel in FP16 against the package's plain kernel with the same
    tiles, measured in the same run; at least half its speed. On a CPU: FP16 correctness only."""
    __tracebackhide__ = True
    import torch

    g = np.random.default_rng(2)
    if device() != "cuda":
        cases = _torch_cases(g, [(2, 37, 37, 16, False), (2, 37, 37, 16, True)], "fp16")
        check_cases(wrapper, _kernel_ref, cases, forbid=_KERNEL_FORBID, label="the attention kernel in FP16",
                    dtype="fp16", k=16)
        return
    z, n, d = 8 * 16, 4096, 64
    gen = torch.Generator(device="cuda").manual_seed(2)
    q, k, v = (torch.randn(z, n, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    seen = run_student(_time_kernel, wrapper, q, k, v, forbid=_KERNEL_FORBID, label="the attention kernel",
                       what="attention_triton")
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert_close(seen["out"].float(), expected.float(), dtype="fp16", k=d, name=f"output at ({z}, {n}, {d}) FP16")
    mine, ref = seen["mine"], seen["ref"]
    ratio = ref / mine
    if ratio < 0.5:
        raise GradingError(f"your kernel takes {mine * 1e3:.2f} ms, {1 / ratio:.1f}x the "
                           f"{ref * 1e3:.2f} ms of gpudl's plain kernel with the same 64 x 64 tiles. "
                           "Does it load K and V once per key block, use tl.dot for both products, and skip the "
                           "key blocks right of the diagonal when causal?")


@student_side
def _time_kernel(wrapper: Callable, q: Any, k: Any, v: Any) -> dict[str, Any]:
    """(Student side, on a GPU) the student's wrapper's output on q, k, v, and the medians of it
    and of the package's plain kernel with 64 x 64 tiles, timed in this process one after the
    other."""
    import torch

    from ..bench import time_cuda

    with torch.no_grad():
        out = wrapper(q, k, v)
        mine = time_cuda(lambda: wrapper(q, k, v), budget_s=0.5, what="your kernel")
        ref = time_cuda(lambda: attention.flash_attention_triton_plain(q, k, v, block_m=64, block_n=64),
                        budget_s=0.5, what="gpudl's plain kernel")
    return {"out": out, "mine": float(mine.median), "ref": float(ref.median)}
