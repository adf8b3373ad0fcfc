"""Attention against torch: the course edition's tools (``gpudl.attention``: general attention,
masks, torch's weights, the naive torch form, the counts and memory models) and lab 07's answers,
which live in the instructor's part (``gpudl_instructor.references.lab07``: softmax, SDPA,
multi-head self-attention, the online softmax, flash attention in NumPy and Triton, FLOPs), and
the instructor's ``gpudl bench attention``."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from torch.utils.flop_counter import FlopCounterMode

from gpudl import attention as A
from gpudl.grading import assert_close, guard, tolerance
from gpudl.references import ReferenceUsedError
from gpudl_instructor.benchmarks import attention as bench
from gpudl_instructor.references import lab07 as R

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


def rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def torch_sdpa(q, k, v, **kw):
    """torch's answer, in float64 on the CPU, for NumPy inputs."""
    t = [torch.from_numpy(np.array(x, dtype=np.float64)) for x in (q, k, v)]
    if "attn_mask" in kw and isinstance(kw["attn_mask"], np.ndarray):
        kw["attn_mask"] = torch.from_numpy(kw["attn_mask"])
    return F.scaled_dot_product_attention(*t, **kw).numpy()


# --- softmax ------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.floats(-50, 50)), st.integers(-3, 2))
def test_softmax_matches_torch_on_any_axis(x, axis):
    axis = axis % x.ndim
    assert_close(R.softmax(x, axis=axis), torch.softmax(torch.from_numpy(x), dim=axis).numpy())


def test_softmax_is_stable_for_large_scores():
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]])
    with np.errstate(over="raise"):
        out = R.softmax(x)
    e = np.exp([0.0, 1.0, 2.0])          # shifting a row changes nothing
    assert_close(out[0], e / e.sum())
    assert_close(out[1], e[::-1] / e.sum())


def test_softmax_of_an_all_masked_row_is_zero():
    out = R.softmax(np.array([[-np.inf, -np.inf], [0.0, -np.inf]]))
    assert np.array_equal(out, [[0.0, 0.0], [1.0, 0.0]])


# --- general attention ------------------------------------------------------------------------

def test_general_attention_one_query_is_sdpa_with_x_as_keys_and_values():
    q, x = rand(8, seed=1), rand(11, 8, seed=2)
    expected = torch_sdpa(q[None], x, x)[0]
    assert_close(A.general_attention(q, x), expected, k=8)


def test_general_attention_with_key_and_value_weights():
    q, x = rand(5, 4, seed=1), rand(9, 6, seed=2)           # N_Q=5, D_Q=4, N_x=9, D_x=6
    w_k, w_v = rand(6, 4, seed=3), rand(6, 3, seed=4)
    expected = torch_sdpa(q, x @ w_k, x @ w_v)               # (5, 3)
    out = A.general_attention(q, x, w_k=w_k, w_v=w_v)
    assert out.shape == (5, 3)
    assert_close(out, expected, k=6)


def test_unscaled_dot_similarity_is_sdpa_with_scale_one():
    q, x = rand(3, 8, seed=5), rand(7, 8, seed=6)
    assert_close(A.general_attention(q, x, similarity=A.dot_similarity), torch_sdpa(q, x, x, scale=1.0), k=8)


def test_bahdanau_similarity():
    q, x = rand(4, seed=1), rand(6, 5, seed=2)
    w_q, w_k, w_e = rand(4, 3, seed=3), rand(5, 3, seed=4), rand(3, seed=5)
    tq, tx = torch.from_numpy(q), torch.from_numpy(x)
    e = torch.tanh(tq @ torch.from_numpy(w_q) + tx @ torch.from_numpy(w_k)) @ torch.from_numpy(w_e)
    expected = (torch.softmax(e, 0) @ tx).numpy()
    assert_close(A.general_attention(q, x, similarity=A.additive_similarity(w_q, w_k, w_e)), expected, k=5)
    # with w_e = 0 every input scores the same: the output is the mean of the inputs
    flat = A.additive_similarity(w_q, w_k, np.zeros(3))
    assert_close(A.general_attention(q, x, similarity=flat), x.mean(axis=0))


# --- scaled dot-product attention --------------------------------------------------------------

SHAPES = [((), 1, 1, 4, 4), ((2,), 5, 5, 8, 8), ((2, 3), 7, 12, 16, 5), ((1, 2), 12, 7, 4, 9), ((3,), 33, 33, 2, 2)]


@pytest.mark.parametrize("batch, lq, lk, d, dv", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_torch(batch, lq, lk, d, dv, causal):
    q, k, v = rand(*batch, lq, d, seed=1), rand(*batch, lk, d, seed=2), rand(*batch, lk, dv, seed=3)
    assert_close(R.scaled_dot_product_attention(q, k, v, causal=causal), torch_sdpa(q, k, v, is_causal=causal), k=d)


def test_sdpa_scale_and_broadcast_batch():
    q, k, v = rand(2, 1, 6, 4, seed=1), rand(1, 3, 9, 4, seed=2), rand(1, 3, 9, 4, seed=3)
    out = R.scaled_dot_product_attention(q, k, v, scale=0.3)
    assert out.shape == (2, 3, 6, 4)
    assert_close(out, torch_sdpa(np.broadcast_to(q, (2, 3, 6, 4)), np.broadcast_to(k, (2, 3, 9, 4)),
                                 np.broadcast_to(v, (2, 3, 9, 4)), scale=0.3), k=4)


def test_sdpa_bool_mask_with_fully_masked_rows_gives_zeros_like_torch():
    q, k, v = rand(2, 6, 4, seed=1), rand(2, 8, 4, seed=2), rand(2, 8, 3, seed=3)
    mask = np.random.default_rng(4).random((2, 6, 8)) < 0.5
    mask[0, 2] = False                      # query 2 of batch 0 may attend to nothing
    mask[1, 5] = False
    out = R.scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(out[0, 2] == 0) and np.all(out[1, 5] == 0) and np.isfinite(out).all()
    assert_close(out, torch_sdpa(q, k, v, attn_mask=mask), k=4)


def test_sdpa_float_mask_is_added():
    q, k, v = rand(5, 4, seed=1), rand(7, 4, seed=2), rand(7, 4, seed=3)
    bias = rand(5, 7, seed=4)
    assert_close(R.scaled_dot_product_attention(q, k, v, mask=bias), torch_sdpa(q, k, v, attn_mask=bias), k=4)


def test_sdpa_causal_combines_with_a_mask():
    q, k, v = rand(6, 4, seed=1), rand(6, 4, seed=2), rand(6, 4, seed=3)
    mask = np.random.default_rng(5).random((6, 6)) < 0.7
    combined = mask & np.tril(np.ones((6, 6), bool))
    assert_close(R.scaled_dot_product_attention(q, k, v, mask=mask, causal=True),
                 torch_sdpa(q, k, v, attn_mask=combined), k=4)


def test_causal_mask_is_top_left_aligned_like_torch():
    expected = torch.ones(3, 5, dtype=torch.bool).tril().numpy()
    assert np.array_equal(A.causal_mask(3, 5), expected)
    assert np.array_equal(A.causal_mask(4), np.tril(np.ones((4, 4), bool)))


def test_sdpa_keeps_float32():
    q = rand(4, 8, dtype=np.float32)
    assert R.scaled_dot_product_attention(q, q, q).dtype == np.float32


def test_sdpa_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="head dimension"):
        R.scaled_dot_product_attention(rand(3, 4), rand(3, 5), rand(3, 5))
    with pytest.raises(ValueError, match="one row per key"):
        R.scaled_dot_product_attention(rand(3, 4), rand(3, 4), rand(2, 4))


# --- multi-head self-attention --------------------------------------------------------------

def torch_mha(d, heads, bias, seed=0):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(d, heads, bias=bias, batch_first=True).double()
    if bias:                                  # torch zeroes the biases at init: make them matter
        with torch.no_grad():
            mha.in_proj_bias.normal_()
            mha.out_proj.bias.normal_()
    return mha.eval()


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_multihead_self_attention_matches_torch(heads, bias, causal):
    d, n = 16, 9
    mha = torch_mha(d, heads, bias)
    x = rand(3, n, d, seed=7)
    tx = torch.from_numpy(x)
    mask = torch.from_numpy(~A.causal_mask(n)) if causal else None          # torch: True = may NOT attend
    expected = mha(tx, tx, tx, need_weights=False, attn_mask=mask)[0].detach().numpy()
    w = A.weights_from_torch(mha)
    out = R.multihead_self_attention(x, w.w_q, w.w_k, w.w_v, w.w_o, heads, causal=causal,
                                     b_q=w.b_q, b_k=w.b_k, b_v=w.b_v, b_o=w.b_o)
    assert_close(out, expected, k=d)


def test_multihead_self_attention_with_key_padding_matches_torch():
    d, heads, n = 16, 4, 7
    mha = torch_mha(d, heads, bias=True, seed=1)
    x = rand(3, n, d, seed=8)
    padding = np.zeros((3, n), bool)
    padding[0, 5:] = True                                   # the last two tokens of sequence 0 are padding
    padding[2, 1:] = True                                   # sequence 2 has one real token
    tx = torch.from_numpy(x)
    expected = mha(tx, tx, tx, key_padding_mask=torch.from_numpy(padding), need_weights=False)[0].detach().numpy()
    w = A.weights_from_torch(mha)
    out = R.multihead_self_attention(x, *w[:4], heads, mask=~padding[:, None, None, :],
                                     b_q=w.b_q, b_k=w.b_k, b_v=w.b_v, b_o=w.b_o)
    assert_close(out, expected, k=d)


def test_multihead_self_attention_unbatched_and_rectangular_weights():
    # D_x=6 -> D_Q=8 (2 heads of 4), D_V=4 (2 heads of 2) -> D_out=5, checked head by head
    x = rand(7, 6, seed=1)
    w_q, w_k, w_v, w_o = rand(6, 8, seed=2), rand(6, 8, seed=3), rand(6, 4, seed=4), rand(4, 5, seed=5)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    heads = [torch_sdpa(q[:, 4 * h:4 * h + 4], k[:, 4 * h:4 * h + 4], v[:, 2 * h:2 * h + 2]) for h in range(2)]
    expected = np.concatenate(heads, axis=-1) @ w_o
    assert_close(R.multihead_self_attention(x, w_q, w_k, w_v, w_o, 2), expected, k=8)


def test_split_heads_gives_each_head_its_columns():
    x = rand(2, 5, 12)
    h = R.split_heads(x, 3)
    assert h.shape == (2, 3, 5, 4)
    for i in range(3):
        assert np.array_equal(h[:, i], x[..., 4 * i:4 * i + 4])
    assert np.array_equal(R.merge_heads(h), x)


def test_multihead_rejects_torch_layout_weights():
    x = rand(4, 6)
    with pytest.raises(ValueError, match="D_x=6 rows"):
        R.multihead_self_attention(x, rand(8, 6), rand(8, 6), rand(8, 6), rand(8, 6), 2)


# --- the online softmax -----------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(1, 4), st.lists(st.integers(1, 29), max_size=4), st.floats(0.1, 300))
def test_merging_block_states_in_any_order_gives_softmax(n, dv, cuts, spread):
    g = np.random.default_rng(n * 7 + dv)
    s = g.standard_normal((3, n)) * spread               # large spreads: exp would overflow unshifted
    v = g.standard_normal((n, dv))
    edges = sorted({0, n, *[c for c in cuts if c < n]})
    states = [R.softmax_block_state(s[:, a:b], v[a:b]) for a, b in zip(edges, edges[1:])]
    order = g.permutation(len(states))
    m, l, acc = np.full(3, -np.inf), np.zeros(3), np.zeros((3, dv))
    for i in order:
        m, l, acc = R.online_softmax_merge(m, l, acc, *states[i])
    expected = torch.softmax(torch.from_numpy(s), -1).numpy() @ v
    # each output is a weighted mean of v's values, and may cancel to far less than them: its
    # rounding error is judged against the size of v, not of the (maybe tiny) outputs
    t = tolerance("fp64", n)[0]
    np.testing.assert_allclose(acc / l[:, None], expected, rtol=t, atol=t * np.abs(v).max())
    assert np.array_equal(m, s.max(axis=1))


def test_merge_with_empty_blocks():
    empty = (np.array([-np.inf, -np.inf]), np.zeros(2), np.zeros((2, 3)))
    half = (np.array([2.0, -np.inf]), np.array([1.5, 0.0]), np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
    m, l, acc = R.online_softmax_merge(*empty, *half)
    assert np.array_equal(m, half[0]) and np.array_equal(l, half[1]) and np.array_equal(acc, half[2])
    m, l, acc = R.online_softmax_merge(*empty, *empty)
    assert np.array_equal(m, [-np.inf, -np.inf]) and not np.any(l) and not np.any(acc) and not np.isnan(acc).any()


def test_merge_rescales_the_accumulators_by_hand():
    # block a: scores [0] with value 1; block b: scores [log 3] with value 2 -> weights 1/4, 3/4
    a = R.softmax_block_state(np.array([[0.0]]), np.array([[1.0]]))
    b = R.softmax_block_state(np.array([[math.log(3.0)]]), np.array([[2.0]]))
    m, l, acc = R.online_softmax_merge(*a, *b)
    assert_close(m, [math.log(3.0)])
    assert_close(l, [1.0 / 3.0 + 1.0])
    assert_close(acc / l[:, None], [[0.25 * 1.0 + 0.75 * 2.0]])


# --- flash attention in NumPy -----------------------------------------------------------------

FLASH_CASES = [(lq, lk, block) for lq, lk in [(1, 1), (15, 15), (16, 16), (17, 17), (37, 37), (100, 100), (20, 53), (53, 20)]
               for block in (16, (8, 32))] + [(1, 1, 1), (7, 9, 1), (9, 7, 1)]     # block 1: a loop per score


@pytest.mark.parametrize("lq, lk, block", FLASH_CASES)
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_matches_torch(lq, lk, block, causal):
    q, k, v = rand(2, lq, 8, seed=1), rand(2, lk, 8, seed=2), rand(2, lk, 5, seed=3)
    assert_close(R.flash_attention(q, k, v, block, causal=causal), torch_sdpa(q, k, v, is_causal=causal), k=8)


def test_flash_attention_broadcasts_and_keeps_dtype():
    q, k, v = rand(3, 1, 20, 8, seed=1, dtype=np.float32), rand(1, 2, 30, 8, seed=2, dtype=np.float32), \
        rand(1, 2, 30, 8, seed=3, dtype=np.float32)
    out = R.flash_attention(q, k, v, 16, scale=0.5)
    assert out.shape == (3, 2, 20, 8) and out.dtype == np.float32
    assert_close(out, R.scaled_dot_product_attention(q, k, v, scale=0.5), k=8)


def test_flash_attention_memory_is_linear_and_naive_is_quadratic():
    n, d = 2048, 32
    q, k, v = rand(n, d, seed=1), rand(n, d, seed=2), rand(n, d, seed=3)
    _, naive = A.peak_traced_bytes(R.scaled_dot_product_attention, q, k, v)
    _, flash = A.peak_traced_bytes(R.flash_attention, q, k, v, 64)
    scores = n * n * 8
    assert naive >= scores, f"naive attention must hold the {scores} bytes of scores, traced {naive}"
    assert flash < 4 * n * d * 8, f"flash attention should hold O(L d) = {n * d * 8} bytes, traced {flash}"


def test_peak_traced_bytes_sees_numpy_allocations():
    def allocate():
        a = np.ones(2**20)                      # 8 MiB
        return float(a.sum())

    result, peak = A.peak_traced_bytes(allocate)
    assert result == 2**20
    assert 8 * 2**20 <= peak < 9 * 2**20
    import tracemalloc
    tracemalloc.start()                         # works inside someone else's tracing, too
    try:
        _, peak2 = A.peak_traced_bytes(allocate)
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()
    assert 8 * 2**20 <= peak2 < 9 * 2**20


def test_peak_traced_bytes_sees_torch_allocations():
    """torch's CPU allocator does not report to tracemalloc; the largest storage a torch function
    returned counts, however the code reached it (a function, a method, the @ operator)."""
    import torch

    def allocate():
        a = torch.ones(2**20, dtype=torch.float64)             # 8 MiB
        b = (a.view(1024, 1024) @ a.view(1024, 1024)[:, :1]).sum()
        return float(b)

    result, peak = A.peak_traced_bytes(allocate)
    assert result == 1024 * 1024                 # 1024 rows of 1024 ones
    assert 8 * 2**20 <= peak < 9 * 2**20
    _, small = A.peak_traced_bytes(lambda: torch.ones(1000).sum())
    assert small < 2**16


# --- Triton ------------------------------------------------------------------------------------

TRITON_CASES = [(37, 37, 16), (32, 32, 16), (1, 1, 16), (20, 50, 16), (50, 20, 16), (37, 37, 24)]


def _tol_dtype(dtype, plain):
    if dtype == torch.float32:
        return "tf32" if (CUDA and plain) else "fp32"
    return {torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]


@pytest.mark.parametrize("fn", [R.flash_attention_triton, R.flash_attention_triton_plain], ids=["tuned", "plain"])
@pytest.mark.parametrize("lq, lk, d", TRITON_CASES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_triton_flash_attention_matches_torch(fn, lq, lk, d, causal, dtype):
    g = torch.Generator().manual_seed(lq * 100 + lk)
    q, k, v = (torch.randn(2, 3, n, d, generator=g).to(DEVICE, dtype) for n in (lq, lk, lk))
    expected = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    out = fn(q, k, v, causal=causal)
    assert out.dtype == dtype and out.shape == (2, 3, lq, d)
    assert_close(out, expected, dtype=_tol_dtype(dtype, fn is R.flash_attention_triton_plain), k=d)


@pytest.mark.parametrize("fn", [R.flash_attention_triton, R.flash_attention_triton_plain], ids=["tuned", "plain"])
def test_triton_flash_attention_takes_strided_and_broadcast_inputs(fn):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 21, 3, 16, generator=g).to(DEVICE)      # (B, L, H, d), as a projection leaves it
    q = x.transpose(1, 2)                                        # (B, H, L, d), not contiguous
    k = torch.randn(1, 3, 19, 16, generator=g).to(DEVICE)        # broadcast over the batch
    expected = F.scaled_dot_product_attention(q.double(), k.double().expand(2, -1, -1, -1),
                                              k.double().expand(2, -1, -1, -1), scale=0.7)
    assert_close(fn(q, k, k, scale=0.7), expected, dtype=_tol_dtype(torch.float32, fn is R.flash_attention_triton_plain),
                 k=16)


def test_triton_flash_attention_rejects_bad_input():
    q = torch.randn(4, 16, device=DEVICE)
    with pytest.raises(TypeError, match="torch tensors"):
        R.flash_attention_triton(q.cpu().numpy(), q, q)
    with pytest.raises(TypeError, match="share one of"):
        R.flash_attention_triton(q, q.half(), q)
    with pytest.raises(ValueError, match="v's head dimension"):
        R.flash_attention_triton(q, q, torch.randn(4, 32, device=DEVICE))


# Each new (length bucket, head dim, causal, dtype) autotunes the kernel once: a handful of cases, not a grid.
GPU_CASES = [(1000, 64, False, torch.float16), (1000, 64, True, torch.float16), (4096, 64, True, torch.float16),
             (4096, 64, False, torch.bfloat16), (333, 128, True, torch.bfloat16), (1024, 128, False, torch.float16)]


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (compiled Triton, FP16 tensor cores)")
@pytest.mark.parametrize("n, d, causal, dtype", GPU_CASES)
def test_tuned_triton_on_gpu_at_scale(n, d, causal, dtype):
    q, k, v = (torch.randn(2, 4, n, d, device="cuda", dtype=dtype) for _ in range(3))
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    assert_close(R.flash_attention_triton(q, k, v, causal=causal), expected, dtype=_tol_dtype(dtype, False), k=d)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU (the fast relaunch runs compiled kernels)")
@pytest.mark.parametrize("causal", [False, True])
def test_tuned_triton_relaunch_matches_the_first_launch(causal):
    # the first call autotunes and launches through the JIT; later calls relaunch the compiled kernel
    # directly: same bits, and a misaligned view (another specialization) still right
    q, k, v = (torch.randn(2, 3, 200, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    first = R.flash_attention_triton(q, k, v, causal=causal)
    for _ in range(2):
        assert torch.equal(R.flash_attention_triton(q, k, v, causal=causal), first)
    big = torch.randn(2, 3, 201 * 64 + 1, device="cuda", dtype=torch.float16)
    odd = big[..., 1:].view(2, 3, 201, 64)[:, :, :200]           # 2-byte offset: not 16-byte aligned
    odd.copy_(q)
    expected = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    assert_close(first, expected, dtype="fp16", k=64)
    assert_close(R.flash_attention_triton(odd, k, v, causal=causal), expected, dtype="fp16", k=64)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA GPU")
def test_naive_attention_torch_on_gpu():
    q, k, v = (torch.randn(2, 4, 300, 64, device="cuda") for _ in range(3))     # FP32; matmul TF32 is off by default
    assert_close(A.naive_attention_torch(q, k, v, causal=True),
                 F.scaled_dot_product_attention(q, k, v, is_causal=True), k=300)


def test_naive_attention_torch_matches_sdpa():
    q, k, v = (torch.randn(2, 3, 17, 8, dtype=torch.float64) for _ in range(3))
    assert_close(A.naive_attention_torch(q, k, v, causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True),
                 k=8)


# --- counts ------------------------------------------------------------------------------------

def test_attention_flops_by_hand_and_against_torch():
    assert R.attention_flops(4, 4, 2) == 2 * 16 * (2 + 2)                 # 16 pairs, 2 + 2 multiply-adds each
    assert R.attention_flops(4, 4, 2, causal=True) == 2 * 10 * 4          # 1 + 2 + 3 + 4 visible pairs
    assert R.attention_flops(5, 3, 2, causal=True) == 2 * int(A.causal_mask(5, 3).sum()) * 4
    assert R.attention_flops(3, 5, 2, causal=True) == 2 * int(A.causal_mask(3, 5).sum()) * 4
    q, k, v = torch.randn(2, 3, 37, 16), torch.randn(2, 3, 50, 16), torch.randn(2, 3, 50, 8)
    with FlopCounterMode(display=False) as counter:
        F.scaled_dot_product_attention(q, k, v)
    assert R.attention_flops(37, 50, 16, 8, batch=6) == counter.get_total_flops()


def test_multihead_counts_against_torch():
    d, heads, n, b = 32, 4, 10, 2
    mha = torch.nn.MultiheadAttention(d, heads, batch_first=True)
    assert A.multihead_self_attention_params(d) == sum(p.numel() for p in mha.parameters())
    x = torch.randn(b, n, d)
    with FlopCounterMode(display=False) as counter:
        q, k, v = (F.linear(x, w) for w in mha.in_proj_weight.chunk(3))
        q, k, v = (t.view(b, n, heads, d // heads).transpose(1, 2) for t in (q, k, v))
        y = torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v          # counted matmul by matmul
        F.linear(y.transpose(1, 2).reshape(b, n, d), mha.out_proj.weight)
    assert A.multihead_self_attention_flops(n, d, heads, batch=b) == counter.get_total_flops()


@pytest.mark.parametrize("d, d_ff", [(32, 128), (48, 64)])
def test_transformer_block_params_against_torch(d, d_ff):
    layer = torch.nn.TransformerEncoderLayer(d, 4, dim_feedforward=d_ff)
    assert A.transformer_block_params(d, d_ff) == sum(p.numel() for p in layer.parameters())


@pytest.mark.parametrize("name, vocab, max_len, rel", [("BERT-Base", 30522, 512, 0.02), ("BERT-Large", 30522, 512, 0.03),
                                                       ("GPT-2", 50257, 1024, 0.05), ("GPT-3", 50257, 2048, 0.01)])
def test_seed_model_sizes_follow_from_layers_and_width(name, vocab, max_len, rel):
    size = next(m for m in A.MODEL_SIZES if m.name == name)
    params = A.transformer_params(size.layers, size.width, vocab=vocab, max_len=max_len)
    assert abs(params / size.params - 1) < rel, f"{name}: {params:.4g} vs the seed's {size.params:.4g}"


def test_memory_models():
    assert A.attention_workspace_bytes(4096, 4096, 64, dtype="fp32") == 4096 * 4096 * 4
    flash = A.attention_workspace_bytes(4096, 4096, 64, dtype="fp32", method="flash", block=64)
    assert flash == A.attention_workspace_bytes(4096, 1024, 64, dtype="fp32", method="flash", block=64)
    assert flash == (64 * 64 + 64 * 64 + 2 * 64) * 4
    naive = A.attention_dram_bytes(4096, 4096, 64, dtype="fp16")
    assert naive == (4 * 4096 * 64 + 4 * 4096 * 4096) * 2
    assert A.attention_dram_bytes(4096, 4096, 64, dtype="fp16", method="flash", block_m=128) < naive / 3
    with pytest.raises(ValueError, match="method"):
        A.attention_workspace_bytes(8, 8, 8, method="tiled")


# --- the benchmark (the instructor's) -------------------------------------------------------------

def run_bench(argv):
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    bench.add_arguments(p)
    return bench.run(p.parse_args(argv))


@pytest.mark.slow
def test_benchmark_table():
    table = run_bench(["--lengths", "256", "512", "--memory"])
    peaks = {(r["L"], r["method"]): r["peak MiB (traced)"] for r in table.rows}
    assert peaks[(512, "naive")] > 3 * peaks[(256, "naive")]      # quadratic
    assert peaks[(512, "flash")] < 3 * peaks[(256, "flash")]      # linear
    assert peaks[(512, "flash")] < peaks[(512, "naive")] / 4
    assert "attention_memory" in table.figures


def test_small_benchmark_rows():
    table = run_bench(["--lengths", "32", "64", "--memory"])
    assert [(r["L"], r["method"]) for r in table.rows] == [(32, "naive"), (32, "flash"), (64, "naive"), (64, "flash")]


# --- the course edition holds no answer ---------------------------------------------------------

ANSWERS = ("softmax", "scaled_dot_product_attention", "split_heads", "merge_heads", "multihead_self_attention",
           "softmax_block_state", "online_softmax_merge", "flash_attention", "attention_flops",
           "flash_attention_triton", "flash_attention_triton_plain", "attention_plain_kernel", "attention_tuned_kernel")


def test_the_answers_live_in_the_instructors_part_only():
    for name in ANSWERS:
        assert not hasattr(A, name), f"gpudl.attention.{name} is an answer of lab 07"
        assert getattr(R, name, None) is not None, name
    assert not hasattr(A, "BENCHMARKS")


def test_course_tools_built_on_torch_are_refused_where_torch_is():
    # lab 07's checks forbid torch's softmax and SDPA: the course tools built on them cannot score
    q, x = rand(3, 8, seed=1), rand(7, 8, seed=2)
    with pytest.raises(ReferenceUsedError):
        with guard("torch.softmax", "torch.nn.functional.softmax"):
            A.general_attention(q, x)
    t = torch.from_numpy(x)
    with pytest.raises(ReferenceUsedError):
        with guard("torch.softmax", "torch.nn.functional.softmax"):
            A.naive_attention_torch(t, t, t)


def test_the_lectures_recorded_memory_is_what_the_references_take():
    # course/07_attention.ipynb records the peak NumPy memory of naive and tiled attention (it may not
    # run the answers): the values are what the references take now
    import ast
    import re
    from pathlib import Path

    from gpudl import notebooks

    nb = notebooks.read(Path(__file__).resolve().parents[1] / "course" / "07_attention.ipynb")
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    recorded = {name: ast.literal_eval(re.search(rf"^{name} = (\[.*\])$", source, re.M).group(1))
                for name in ("lengths", "naive_mib", "flash_mib")}
    g = np.random.default_rng(0)
    for n, naive_mib, flash_mib in zip(recorded["lengths"], recorded["naive_mib"], recorded["flash_mib"]):
        q, k, v = (g.standard_normal((n, 64)).astype(np.float32) for _ in range(3))
        _, naive = A.peak_traced_bytes(R.scaled_dot_product_attention, q, k, v)
        _, flash = A.peak_traced_bytes(R.flash_attention, q, k, v, 64)
        assert naive / 2**20 == pytest.approx(naive_mib, rel=0.05), n
        assert flash / 2**20 == pytest.approx(flash_mib, rel=0.05), n
