"""gpudl.quantization: torch's calibration and quantization as the course's tools (equal to lab 09's
references, ``gpudl_instructor.references.lab09``, which are tested here too), an INT32-accumulating
GEMM equal to exact integer arithmetic, and a small model where per-channel scales survive an
outlier channel."""
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
