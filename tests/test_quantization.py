"""gpudl.quantization: torch's calibration and quantization as the course's tools (equal to lab 09's
references, ``gpudl_instructor.references.lab09``, which are tested here too), an INT32-accumulating
GEMM equal to exact integer arithmetic, and a small model where per-channel scales survive an
outlier channel. Then the Triton INT8 GEMM (``gpudl.gemm.int8``: exact, any layout, the scales'
epilogue; in Triton's interpreter without a GPU), the layout ``int8_matmul`` hands
``torch._int_mm``, lab 09's check refusing the kernel, and ``gpudl bench inference``'s INT8 part."""
from __future__ import annotations

import numpy as np
import pytest
import torch
try:
    from hypothesis import given, settings, strategies as st
except ImportError:                     # a GPU runner without hypothesis still runs the rest
    given = None

from gpudl import quantization as Q
from gpudl_instructor.references import lab09 as ref      # lab 09's answers, kept by the instructor

CUDA = torch.cuda.is_available()


def test_scale_is_amax_over_127_and_zero_channels_get_one():
    assert ref.symmetric_scale(127.0) == 1.0 and ref.symmetric_scale(2.54) == pytest.approx(0.02)
    assert np.array_equal(ref.symmetric_scale(np.array([0.0, 254.0])), [1.0, 2.0])
    with pytest.raises(ValueError):
        ref.symmetric_scale(-1.0)


def test_quantize_rounds_half_to_even_and_clamps_symmetrically():
    q = ref.quantize(np.array([0.5, 1.5, 2.5, -2.5, 126.6, 300.0, -300.0]), 1.0)
    assert q.dtype == np.int8
    assert q.tolist() == [0, 2, 2, -2, 127, 127, -127]              # never -128: the range is symmetric


def _half_a_step_at_most(values):
    x = np.array(values)
    q, s = ref.quantize_per_tensor(x)
    assert np.all(np.abs(q.astype(int)) <= 127)
    assert np.all(np.abs(Q.dequantize(q, s).astype(np.float64) - x) <= s / 2 * (1 + 1e-6) + 1e-30)


if given is not None:
    @settings(max_examples=50, deadline=None)
    @given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=50))
    def test_per_tensor_error_is_at_most_half_a_step(values):
        _half_a_step_at_most(values)
else:
    @pytest.mark.parametrize("seed", range(20))
    def test_per_tensor_error_is_at_most_half_a_step(seed):
        g = np.random.default_rng(seed)
        _half_a_step_at_most(g.uniform(-1e3, 1e3, int(g.integers(1, 50))) * g.choice([1e-3, 1, 1e3]))


def test_per_channel_scales_follow_the_channel_axis():
    g = np.random.default_rng(0)
    w = g.standard_normal((5, 7, 3, 3)) * np.array([1, 10, 100, 0.1, 1])[:, None, None, None]
    q, s = ref.quantize_per_channel(w, axis=0)
    assert s.shape == (5,) and np.allclose(s, np.abs(w).reshape(5, -1).max(1) / 127)
    err = np.abs(Q.dequantize(q, s, axis=0).astype(np.float64) - w)
    assert np.all(err <= s[:, None, None, None] / 2 * (1 + 1e-6))
    q1, s1 = ref.quantize_per_channel(w, axis=1)
    assert s1.shape == (7,)
    per_tensor = Q.channel_errors(w, *ref.quantize_per_tensor(w))
    per_channel = Q.channel_errors(w, q, s)
    assert per_channel.max() < 0.01 and per_tensor[3] > 0.5           # the small channel drowns per tensor


@pytest.mark.parametrize("shape, axis", [((5, 7), 0), ((5, 7), 1), ((3, 4, 2, 2), 0), ((4, 9), None), ((6,), None)])
def test_torch_tools_agree_with_the_references(shape, axis):
    g = np.random.default_rng(len(shape) + (axis or 0))
    w = g.standard_normal(shape) * 3
    w.reshape(-1)[0] = 40.0                                          # an outlier the percentile clips
    assert np.allclose(Q.torch_amax(w, axis=axis), ref.calibrate_max(w, axis))
    assert np.allclose(Q.torch_amax(w, method="percentile", percentile=90.0, axis=axis),
                       ref.calibrate_percentile(w, 90.0, axis))
    for amax in (Q.torch_amax(w, axis=axis), Q.torch_amax(w, method="percentile", percentile=90.0, axis=axis)):
        s = ref.symmetric_scale(amax)
        q = Q.torch_quantize(w, scale=s, axis=axis)
        assert q.dtype == np.int8 and np.array_equal(q, ref.quantize(w, s, axis))   # clipped to +-127, never -128
    with pytest.raises(ValueError, match="method"):
        Q.torch_amax(w, method="mean")


def test_calibration_by_percentile_clips_outliers():
    g = np.random.default_rng(1)
    x = np.concatenate([g.standard_normal(100_000), [80.0, -120.0]])
    assert ref.calibrate_max(x) == 120.0
    p = ref.calibrate_percentile(x, 99.9)
    assert 2.5 < p < 4.5 and ref.calibrate_percentile(x, 100) == 120.0
    mse = {}
    for method in ("max", "percentile"):
        q, scale = ref.quantize_per_tensor(x, method, percentile=99.9)
        err = Q.dequantize(q, scale) - x
        mse[method] = (np.mean(err[:-2] ** 2), np.abs(err[-2:]).max())     # (the bulk, the two outliers)
    assert mse["percentile"][0] < mse["max"][0] / 100     # everything but the outliers is far finer ...
    assert mse["percentile"][1] > 50 > mse["max"][1]      # ... and the outliers are clipped
    per_row = ref.calibrate_percentile(np.array([[1.0, -2, 3, 100], [4, 5, -6, 7]]), 50, axis=0)
    assert per_row.shape == (2,)
    with pytest.raises(ValueError, match="percent"):
        ref.calibrate_percentile(x, 0.0)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (3, 5, 7), (17, 64, 24), (8, 1024, 8)])
def test_int8_matmul_equals_exact_integer_arithmetic(m, k, n):
    g = np.random.default_rng(m * k * n)
    a = g.integers(-127, 128, (m, k), dtype=np.int8)
    b = g.integers(-127, 128, (k, n), dtype=np.int8)
    exact = np.array(Q.exact_matmul(a, b), dtype=np.int64)
    got = Q.int8_matmul(a, b)
    assert got.dtype == np.int32 and np.array_equal(got, exact)
    got_t = Q.int8_matmul(torch.from_numpy(a), torch.from_numpy(b))
    assert got_t.dtype == torch.int32 and np.array_equal(got_t.numpy(), exact)


def test_int8_accumulation_would_overflow():
    a = np.full((2, 256), 127, dtype=np.int8)
    b = np.full((256, 2), -127, dtype=np.int8)
    exact = Q.exact_matmul(a, b)[0][0]
    assert exact == -127 * 127 * 256 and Q.int8_matmul(a, b)[0, 0] == exact
    assert int((a @ b)[0, 0]) != exact                       # NumPy keeps int8: the sum wraps around
    with pytest.raises(TypeError, match="int8"):
        Q.int8_matmul(a.astype(np.int16), b)


def test_int8_linear_is_the_dequantized_operands_times_each_other():
    g = np.random.default_rng(2)
    x, w, bias = g.standard_normal((6, 32)), g.standard_normal((5, 32)), g.standard_normal(5)
    q_x, s_x = ref.quantize_per_tensor(x)
    q_w, s_w = ref.quantize_per_channel(w, 0)
    y = ref.int8_linear(q_x, s_x, q_w, s_w, bias)
    want = (q_x.astype(np.float64) * s_x) @ (q_w.astype(np.float64) * s_w[:, None]).T + bias
    assert y.dtype == np.float32 and y.shape == (6, 5)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    # and within the rounding's bound of the float layer: each operand off by at most half its step
    bound = np.abs(x).sum(1, keepdims=True) * s_w / 2 + s_x / 2 * np.abs(w).sum(1) + 32 * s_x * s_w / 4
    assert np.all(np.abs(y - (x @ w.T + bias)) <= bound * (1 + 1e-6))


def _trained_mlp():
    torch.manual_seed(0)
    g = np.random.default_rng(0)
    centers = g.standard_normal((6, 12))
    y = g.integers(0, 6, 3000)
    x = torch.tensor(centers[y] + 0.6 * g.standard_normal((3000, 12)), dtype=torch.float32)
    y = torch.tensor(y)
    model = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(), torch.nn.Linear(32, 6))
    for _ in range(150):
        loss = torch.nn.functional.cross_entropy(model(x[:1000]), y[:1000])
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.2 * p.grad
    return model.eval(), x, y


def test_an_outlier_channel_ruins_per_tensor_int8_but_not_per_channel():
    model, x, y = _trained_mlp()
    fp32 = lambda v: model(torch.as_tensor(v)).detach()              # noqa: E731
    base = Q.accuracy(fp32, x[1000:], y[1000:])
    assert base > 0.9
    for per_channel in (False, True):
        assert Q.accuracy(Q.quantize_mlp(model, x[:256], per_channel=per_channel), x[1000:], y[1000:]) > base - 0.02
    with torch.no_grad():                                            # channel 3 x 300, undone by the BN
        s = 300.0
        model[0].weight[3] *= s
        model[0].bias[3] *= s
        model[1].running_mean[3] *= s
        model[1].running_var[3] *= s * s
    assert Q.accuracy(fp32, x[1000:], y[1000:]) == pytest.approx(base, abs=0.002)
    per_tensor = Q.accuracy(Q.quantize_mlp(model, x[:256], per_channel=False), x[1000:], y[1000:])
    per_channel = Q.accuracy(Q.quantize_mlp(model, x[:256], per_channel=True), x[1000:], y[1000:])
    assert per_channel > base - 0.02 and per_tensor < base - 0.2


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("m, k, n", [(32, 64, 32), (4096, 4096, 4096), (5, 24, 8)])   # (5, ...) falls back
def test_int_mm_on_the_gpu_equals_exact_integer_arithmetic(m, k, n):
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-127, 128, (m, k), generator=g, dtype=torch.int8)
    b = torch.randint(-127, 128, (k, n), generator=g, dtype=torch.int8)
    got = Q.int8_matmul(a.cuda(), b.cuda())
    assert got.dtype == torch.int32 and got.is_cuda
    exact = a.long() @ b.long()                                       # int64 on the CPU: exact
    assert torch.equal(got.cpu().long(), exact)


# --- the Triton INT8 GEMM ----------------------------------------------------------------------------

from gpudl.gemm import int8 as G                              # noqa: E402 - after the section's title
from gpudl.grading import GradingError, assert_close          # noqa: E402

DEVICE = "cuda" if CUDA else "cpu"                               # CPU tensors: Triton's interpreter


def _int8(g, shape, extreme=False):
    if extreme:                                                  # +-120..127: sums far beyond int16
        return torch.from_numpy((g.choice([-1, 1], size=shape) * g.integers(120, 128, size=shape)).astype(np.int8))
    return torch.from_numpy(g.integers(-127, 128, size=shape).astype(np.int8))


def _exact(a, b):
    return a.cpu().numpy().astype(np.int64) @ b.cpu().numpy().astype(np.int64)


# Shapes that are not multiples of the interpreter's 32 x 32 x 32 tile, a single element, and K
# long enough for several tiles of K.
SHAPES = [(1, 1, 1), (33, 70, 45), (64, 64, 64), (17, 100, 9), (40, 96, 72)]


@pytest.mark.parametrize("m, k, n", SHAPES)
@pytest.mark.parametrize("layout", ["row-major B", "column-major B", "transposed A"])
def test_triton_int8_equals_exact_integer_arithmetic(m, k, n, layout):
    g = np.random.default_rng(m * 1000 + k * 10 + n)
    a, b = _int8(g, (m, k)), _int8(g, (k, n))
    exact = _exact(a, b)
    a_in, b_in = a.to(DEVICE), b.to(DEVICE)
    if layout == "column-major B":
        b_in = b_in.t().contiguous().t()
        assert b_in.stride() == (1, k)
    elif layout == "transposed A":
        a_in = a_in.t().contiguous().t()                         # a view with stride(1) != 1
        assert a_in.stride() == (1, m)
    got = G.int8_matmul_triton(a_in, b_in)
    assert got.dtype == torch.int32 and tuple(got.shape) == (m, n)
    assert np.array_equal(got.cpu().numpy().astype(np.int64), exact)


def test_triton_int8_sums_beyond_int16_exactly():
    g = np.random.default_rng(7)
    a = _int8(g, (8, 256), extreme=True)
    b = torch.from_numpy(np.sign(a.numpy()[:1].T).astype(np.int8) * _int8(g, (256, 5), extreme=True).abs().numpy())
    exact = _exact(a, b)
    assert np.abs(exact).max() > 2 ** 15 * 100                   # int16 would wrap, float16 would round
    assert np.array_equal(G.int8_matmul_triton(a.to(DEVICE), b.to(DEVICE)).cpu().numpy().astype(np.int64), exact)


@pytest.mark.parametrize("kind", ["per tensor", "per channel", "per row and channel, with bias", "bias only"])
def test_triton_int8_epilogue_applies_the_scales_and_bias(kind):
    g = np.random.default_rng(3)
    m, k, n = 37, 80, 50
    a, b = _int8(g, (m, k)), _int8(g, (k, n))
    sums = _exact(a, b).astype(np.float64)
    s_a = 0.013 if kind != "per row and channel, with bias" else g.uniform(0.001, 0.1, m)
    s_b = 0.021 if kind == "per tensor" else g.uniform(0.001, 0.1, n)
    bias = g.standard_normal(n) if "bias" in kind else None
    if kind == "bias only":
        s_a = s_b = None
    want = sums * (1.0 if s_a is None else np.reshape(s_a, (-1, 1)))
    want = want * (1.0 if s_b is None else np.reshape(s_b, (1, -1)))
    if bias is not None:
        want = want + bias[None, :]
    to = (lambda v: None if v is None else (v if np.isscalar(v) else torch.from_numpy(np.asarray(v))))
    y = G.int8_matmul_triton(a.to(DEVICE), b.to(DEVICE), scale_a=to(s_a), scale_b=to(s_b), bias=to(bias))
    assert y.dtype == torch.float32 and tuple(y.shape) == (m, n)
    assert_close(y.cpu().numpy(), want, dtype="fp32", name="scaled INT8 GEMM")     # FP32 epilogue: a few roundings
    forgotten = want - bias[None, :] if bias is not None else sums * np.reshape(s_b, (1, -1))   # no bias, no s_a
    with pytest.raises(GradingError):                                                # ... and each term matters
        assert_close(y.cpu().numpy(), forgotten, dtype="fp32")


def test_triton_int8_refuses_bad_input_clearly():
    a = torch.zeros((4, 8), dtype=torch.int8, device=DEVICE)
    b = torch.zeros((8, 3), dtype=torch.int8, device=DEVICE)
    with pytest.raises(TypeError, match="int8"):
        G.int8_matmul_triton(a.float(), b)
    with pytest.raises(TypeError, match="torch tensors"):
        G.int8_matmul_triton(a.cpu().numpy(), b)
    with pytest.raises(ValueError, match="inner dimensions"):
        G.int8_matmul_triton(a, b[:4])
    with pytest.raises(ValueError, match="scale_b must be one number or 3"):
        G.int8_matmul_triton(a, b, scale_b=torch.ones(4))
    with pytest.raises(ValueError, match="bias must have N = 3"):
        G.int8_matmul_triton(a, b, bias=torch.ones(2))
    with pytest.raises(ValueError, match="power of two"):
        G.Int8Config(48, 64, 64)
    assert G.int8_matmul_triton(a[:, :0], b[:0]).eq(0).all()                      # K = 0: empty sums are 0
    huge = a[:1, :1].expand(2 ** 16, 2 ** 15)                                       # 2^31 elements, no memory
    with pytest.raises(ValueError, match="32-bit"):
        G.int8_matmul_triton(huge, b[:1, :1].expand(2 ** 15, 8))


def test_int8_matmul_hands_int_mm_a_column_major_b(monkeypatch):
    """The layout INT8 tensor cores read: B (K, N) with stride(0) == 1. A row-major B is laid out
    so once; a column-major B (W.T of a row-major weight) goes as it is, not copied."""
    seen = []
    original = torch._int_mm

    def recording(a, b):
        seen.append((a.stride(), b.stride(), b.data_ptr()))
        return original(a, b)

    monkeypatch.setattr(torch, "_int_mm", recording)
    g = np.random.default_rng(5)
    a, w = _int8(g, (32, 64)), _int8(g, (24, 64))                  # w: a weight (N, K), row-major
    exact = _exact(a, w.T)
    got = Q.int8_matmul(a, w.T.contiguous())                       # B row-major: the trap, fixed inside
    assert seen[-1][:2] == ((64, 1), (1, 64)) and np.array_equal(got.numpy(), exact)
    got = Q.int8_matmul(a, w.T)                                    # B column-major already: no copy
    assert seen[-1][:2] == ((64, 1), (1, 64)) and seen[-1][2] == w.data_ptr()
    assert np.array_equal(got.numpy(), exact)
    assert Q.column_major(w.T) is w.T or Q.column_major(w.T).data_ptr() == w.data_ptr()
    assert Q.column_major(w.T.contiguous()).stride() == (1, 64)


def test_lab09_check_refuses_the_triton_kernel_as_it_refuses_int8_matmul():
    """The kernel's epilogue is the INT8 linear layer: a student's layer built on it computes the
    right values, and the exercise's check refuses it."""
    from gpudl.grading import lab09 as check

    def built_on_the_kernel(q_x, s_x, q_w, s_w, bias):
        y = G.int8_matmul_triton(torch.from_numpy(q_x).to(DEVICE), torch.from_numpy(q_w).to(DEVICE).T, scale_a=s_x,
                                 scale_b=torch.from_numpy(np.asarray(s_w)),
                                 bias=None if bias is None else torch.from_numpy(np.asarray(bias)))
        return y.cpu().numpy()

    g = np.random.default_rng(9)
    q_x, s_x, q_w, s_w, bias = check._int8_case(g, 3, 16, 5, False, True)
    want = _exact(torch.from_numpy(q_x), torch.from_numpy(q_w).T) * s_x * s_w[None, :] + bias[None, :]
    assert_close(built_on_the_kernel(q_x, s_x, q_w, s_w, bias), want, dtype="fp32")
    with pytest.raises(GradingError, match="int8_matmul_triton"):
        check.int8_linear(built_on_the_kernel)


def test_int8_linear_reference_on_the_device_equals_float64():
    g = np.random.default_rng(4)
    q_x, q_w = g.integers(-127, 128, (20, 48)).astype(np.int8), g.integers(-127, 128, (12, 48)).astype(np.int8)
    s_x, s_w, bias = 0.02, g.uniform(0.001, 0.1, 12), g.standard_normal(12)
    y = ref.int8_linear(q_x, s_x, q_w, s_w, bias)        # on a GPU: the Triton kernel with its epilogue
    want = _exact(torch.from_numpy(q_x), torch.from_numpy(q_w).T) * s_x * s_w[None, :] + bias[None, :]
    assert y.dtype == np.float32 and y.shape == (20, 12)
    assert_close(y, want, dtype="fp32")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("m, k, n", [(512, 512, 512), (1000, 1536, 776), (2048, 2048, 2048)])
def test_triton_int8_autotuned_on_the_gpu_equals_int_mm_and_exact(m, k, n):
    g = torch.Generator().manual_seed(m + k + n)
    a = torch.randint(-127, 128, (m, k), generator=g, dtype=torch.int8).cuda()
    b = torch.randint(-127, 128, (k, n), generator=g, dtype=torch.int8).cuda()
    got = G.int8_matmul_triton(a, Q.column_major(b))
    assert torch.equal(got[:64, :64].cpu().long(), a[:64].cpu().long() @ b[:, :64].cpu().long())
    if m > 16 and k % 8 == 0 and n % 8 == 0:
        assert torch.equal(got, torch._int_mm(a, Q.column_major(b)))
    assert G.best_int8_config(m, n, k) is not None


def test_int8_lean_path_launches_the_kept_plan_only_for_its_signature(monkeypatch):
    """A repeated call goes straight to the launch kept for its signature (operands, which scales
    and bias, their lengths, out_dtype), with the pointers of this call; any other call (other
    strides, Python numbers as scales, a missing scale, an unaligned base, ``config`` given)
    takes the long way; a plan that fails is dropped and relaunching turned off."""
    from gpudl import _launch

    g = np.random.default_rng(11)
    a, b = _int8(g, (24, 40)).to(DEVICE), _int8(g, (40, 16)).to(DEVICE)
    exact = _exact(a.cpu(), b.cpu())
    s_a = torch.full((24,), 0.5, device=DEVICE)
    s_b = torch.full((16,), 0.25, device=DEVICE)
    used = []

    def plan(*pointers):                    # stands in for the compiled kernel's launch
        used.append(tuple(t.data_ptr() for t in pointers))
        pointers[2].fill_(7)
    sums_sig = G._signature(a, b, None, None, None, None)
    layer_sig = G._signature(a, b, s_a, s_b, None, torch.float16)
    monkeypatch.setattr(G, "_PLANS", {sums_sig: plan, layer_sig: plan})
    got = G.int8_matmul_triton(a, b)
    assert got.dtype == torch.int32 and got.eq(7).all()
    assert used[-1][:2] == (a.data_ptr(), b.data_ptr()) and len(set(used[-1][2:])) == 1     # unused: out
    y = G.int8_matmul_triton(a, b, scale_a=s_a, scale_b=s_b, out_dtype=torch.float16)
    assert y.dtype == torch.float16 and y.eq(7).all()
    assert used[-1][3:] == (s_a.data_ptr(), s_b.data_ptr(), s_a.data_ptr())               # no bias: any pointer
    a2 = _int8(g, (24, 40)).to(DEVICE)                                         # same signature, other data
    assert G.int8_matmul_triton(a2, b).eq(7).all() and used[-1][0] == a2.data_ptr()
    n_used = len(used)
    long_way = [G.int8_matmul_triton(a, b.t().contiguous().t()),             # other strides
                G.int8_matmul_triton(a, b, config=G.INT8_INTERPRETER_CONFIG if not CUDA else G.SMALL_CONFIG)]
    for got in long_way:
        assert np.array_equal(got.cpu().numpy().astype(np.int64), exact)
    for kw in (dict(scale_a=0.5, scale_b=0.25, out_dtype=torch.float16),           # numbers: copied each call
               dict(scale_b=s_b, out_dtype=torch.float16),                          # a missing scale
               dict(scale_a=s_a, scale_b=s_b)):                                     # another out_dtype
        y = G.int8_matmul_triton(a, b, **kw)
        assert_close(y.float().cpu().numpy(), exact * (0.125 if "scale_a" in kw else 0.25),
                     dtype="fp16" if kw.get("out_dtype") else "fp32")
    assert G._signature(a, b, s_a.cpu() if CUDA else s_a.double(), s_b, None, None) is None   # elsewhere, FP64
    buf = torch.zeros(24 * 40 + 1, dtype=torch.int8, device=DEVICE)
    unaligned = buf[1:].view(24, 40)
    unaligned.copy_(a)
    assert unaligned.data_ptr() % 16 and G._signature(unaligned, b, None, None, None, None) in G._PLANS
    assert np.array_equal(G.int8_matmul_triton(unaligned, b).cpu().numpy().astype(np.int64), exact)
    assert len(used) == n_used
    assert G._signature(a.numpy() if not CUDA else a.cpu().numpy(), b, None, None, None, None) is None

    def broken(*pointers):
        raise RuntimeError("this Triton launches compiled kernels otherwise")
    monkeypatch.setattr(G, "_PLANS", {sums_sig: broken})
    monkeypatch.setattr(_launch, "RELAUNCH", _launch.RELAUNCH)     # give_up() turns it off; restored after
    assert np.array_equal(G.int8_matmul_triton(a, b).cpu().numpy().astype(np.int64), exact)   # the long way
    assert G._PLANS == {} and _launch.RELAUNCH is False


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="the lean path keeps compiled launches")
def test_int8_lean_path_on_the_gpu_keeps_each_call_form_and_gives_the_same_results():
    g = torch.Generator().manual_seed(5)
    m, k, n = 1024, 1024, 1024                                     # autotuned (above SMALL_OPS)
    a = torch.randint(-127, 128, (m, k), generator=g, dtype=torch.int8).cuda()
    b = Q.column_major(torch.randint(-127, 128, (k, n), generator=g, dtype=torch.int8).cuda())
    s_a, s_b = torch.rand(m, device="cuda") / 100, torch.rand(n, device="cuda") / 100
    bias = torch.randn(n, device="cuda")
    want = torch._int_mm(a, b)
    forms = [dict(), dict(scale_a=s_a, scale_b=s_b, out_dtype=torch.float16),
             dict(scale_a=s_a[:1], scale_b=s_b, bias=bias)]
    for kw in forms:
        first = G.int8_matmul_triton(a, b, **kw)                                  # the long way, kept
        assert G._signature(a, b, kw.get("scale_a"), kw.get("scale_b"), kw.get("bias"), kw.get("out_dtype")) \
            in G._PLANS
        again = G.int8_matmul_triton(a, b, **kw)                                  # the lean path
        assert again.data_ptr() != first.data_ptr() and torch.equal(again, first)
    assert torch.equal(G.int8_matmul_triton(a, b), want)
    small_a = a[:64, :256].contiguous()                                          # below SMALL_OPS: SMALL_CONFIG
    small_b = Q.column_major(b[:256, :64].contiguous())
    for _ in range(2):
        assert torch.equal(G.int8_matmul_triton(small_a, small_b), torch._int_mm(small_a, small_b))
    a2 = torch.randint(-127, 128, (m, k), generator=g, dtype=torch.int8).cuda()
    assert torch.equal(G.int8_matmul_triton(a2, b), torch._int_mm(a2, b))       # same plan, other data


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("cfg", [*G.INT8_CONFIGS, G.SMALL_CONFIG],
                         ids=lambda c: f"{c.label} w{c.num_warps} s{c.num_stages}")
def test_every_int8_configuration_is_exact_on_the_gpu(cfg):
    if cfg.tma and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs compute capability 9.0+")
    g = torch.Generator().manual_seed(1)
    m, k, n = 300, 640, 520                                         # not multiples of any tile
    a = torch.randint(-127, 128, (m, k), generator=g, dtype=torch.int8).cuda()
    b = Q.column_major(torch.randint(-127, 128, (k, n), generator=g, dtype=torch.int8).cuda())
    try:
        got = G.int8_matmul_triton(a, b, config=cfg)
        y = G.int8_matmul_triton(a, b, scale_a=0.5, scale_b=torch.full((n,), 0.25), bias=torch.ones(n), config=cfg)
    except Exception as exc:                                        # noqa: BLE001
        if "resource" in type(exc).__name__.lower() or "shared memory" in str(exc):
            pytest.skip(f"{cfg.label} does not fit this GPU: {exc}")
        raise
    exact = a.cpu().long() @ b.cpu().long()
    assert torch.equal(got.cpu().long(), exact)
    assert_close(y.cpu().numpy(), exact.double().numpy() * 0.125 + 1, dtype="fp32")


# --- gpudl bench inference: the INT8 part ------------------------------------------------------------

def test_bench_inference_int8_runs_on_this_device(tmp_path):
    from gpudl import benchmarks
    from gpudl.benchmarks import inference

    record = tmp_path / "int8.json"
    sizes = ["512"] if CUDA else ["64"]
    table = benchmarks.run("inference", ["--quick", "--parts", "int8", "--gemm", *sizes, "--record", str(record)])
    whats = [r["what"] for r in table.rows]
    if CUDA:
        assert whats == ["torch.matmul FP16 (cuBLAS)", "torch._int_mm, B row-major", "torch._int_mm, B column-major",
                         "Triton INT8 (int8_matmul_triton)", inference.LAYER_ROW]
        kept = inference.recorded_int8(record)
        (gpu, entry), = kept.items()
        assert entry["command"].startswith("gpudl bench inference") and len(entry["rows"]) == 5
        assert all(r["TOP/s"] > 0 and r["n"] == 512 for r in entry["rows"])
    else:
        assert whats == ["NumPy int8 -> int32", "NumPy float32 (BLAS)"]
        notes = " ".join(table.notes)
        assert "no GPU" in notes and "skipped" in notes and "equals exact integer arithmetic" in notes
        assert "nothing recorded" in notes and not record.exists()


def test_bench_inference_names_rows_whose_per_call_timing_the_host_paced():
    from gpudl.benchmarks import inference

    rows = [{"case": "2048^3", "what": "Triton INT8 (int8_matmul_triton)", "median ms": 0.0374, "graph ms": 0.0219},
            {"case": "2048^3", "what": inference.LAYER_ROW, "median ms": 0.0201, "graph ms": 0.0198},
            {"case": "2048^3", "what": "torch._int_mm, B column-major", "median ms": 0.0317, "graph ms": None},
            {"case": "4096^3", "what": "Triton INT8 (int8_matmul_triton)", "median ms": 0.1400, "graph ms": 0.1209}]
    notes = inference.host_bound(rows)
    assert len(notes) == 2
    assert notes[0].startswith("int8 2048^3: Triton INT8") and "37.4 us against 21.9 us" in notes[0]
    assert "4096^3" in notes[1] and "140.0 us against 120.9 us" in notes[1] and "the host" in notes[1]
    assert inference.host_bound(rows, margin=1.2) == notes[:1]


def test_recorded_int8_reads_a_record_and_refuses_anything_else(tmp_path):
    from gpudl.benchmarks import inference

    assert inference.recorded_int8(tmp_path / "none.json") == {}
    entry = {"device": "NVIDIA H100", "date": "2026-11-25", "command": "gpudl bench inference --record",
             "torch": "2.11", "triton": "3.6", "title": "Inference", "notes": [],
             "rows": [{"part": "fusion", "case": "8192x8192 fp16", "what": "fused Triton kernel", "median ms": 0.1},
                      {"part": "int8", "case": "2048^3", "what": "torch.matmul FP16 (cuBLAS)", "median ms": 0.03,
                       "speed-up": 1.0, "config": ""}]}
    (tmp_path / "good.json").write_text(__import__("json").dumps({"H100-SXM": entry}))
    (row,) = inference.recorded_int8(tmp_path / "good.json")["H100-SXM"]["rows"]      # the INT8 rows only
    assert row["n"] == 2048 and row["what"] == "torch.matmul FP16 (cuBLAS)"
    assert row["TOP/s"] == pytest.approx(2 * 2048 ** 3 / 0.03e-3 / 1e12)          # 2 n^3 over the time
    (tmp_path / "bad.json").write_text('{"H100": [1, 2]}')
    with pytest.raises(ValueError, match="not a record"):
        inference.recorded_int8(tmp_path / "bad.json")
