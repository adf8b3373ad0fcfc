"""gpudl.roofline reproduces the lectures' counts and intensity table."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402

from gpudl import roofline as r  # noqa: E402
from gpudl.hardware import peak_bandwidth, peak_flops  # noqa: E402


def test_the_seeds_conv_example():
    # seed 000: ((3x3)x3 + 1) x 16 x 208 x 240 x 2 = 44,728,320; FP32 input 2,396,160 B, output 3,194,880 B, 448 params
    assert r.conv2d_flops((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True) == 44_728_320
    assert r.tensor_bytes((1, 3, 416, 480), "fp32") == 2_396_160
    assert r.tensor_bytes((1, 16, 208, 240), "fp32") == 3_194_880
    assert r.conv2d_bytes((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True, include_weights=False) == 5_591_040
    assert r.conv2d_bytes((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True) == 5_591_040 + 448 * 4


def test_conv_without_bias_and_with_groups():
    assert r.conv2d_flops((1, 3, 416, 480), (1, 16, 208, 240), 3) == 2 * 27 * 16 * 208 * 240
    # depthwise: each output channel sees one input channel
    assert r.conv2d_flops((2, 8, 10, 10), (2, 8, 8, 8), 3, groups=8) == 2 * 9 * 2 * 8 * 8 * 8


@pytest.mark.parametrize("batch, intensity, label", [(512, 315, "compute"), (1, 1, "memory")])
def test_the_seeds_linear_layer_on_a_v100(batch, intensity, label):
    f, b = r.linear_flops(batch, 1024, 4096), r.linear_bytes(batch, 1024, 4096, "fp16")
    assert r.arithmetic_intensity(f, b) == pytest.approx(intensity, rel=0.01)
    assert r.bound(f, b, "V100", "fp16") == label


def test_the_seeds_memory_bound_ops():
    n = 64 * 56 * 56
    assert r.arithmetic_intensity(r.pool2d_flops(n, 3), r.pool2d_bytes(n, n, "fp16")) == pytest.approx(2.25)
    assert r.arithmetic_intensity(r.elementwise_flops(n), r.elementwise_bytes(n, "fp16")) == pytest.approx(0.25)
    ln = r.arithmetic_intensity(r.layer_norm_flops(512, 1024), r.layer_norm_bytes(512, 1024, "fp16"))
    assert 0 < ln < 10
    for f, b in [(r.pool2d_flops(n, 3), r.pool2d_bytes(n, n)), (r.layer_norm_flops(512, 1024), r.layer_norm_bytes(512, 1024))]:
        assert r.bound(f, b, "V100", "fp16") == "memory"


def test_seed_arithmetic_intensity_example():
    assert r.arithmetic_intensity(32, 17) == pytest.approx(1.88, abs=0.005)


def test_time_bounds_correct_the_seeds_units():
    from gpudl.hardware import GPUSpec
    toy = GPUSpec(name="toy", architecture="toy", compute_capability=(0, 0), sms=1, cuda_fma_per_sm={"fp32": 1},
                  tensor_fma_per_sm={}, boost_clock_mhz=0.5e6, memory_bandwidth_gbs=1000, memory_gib=1,
                  l2_kib=1, smem_per_sm_kib=1, registers_per_sm_kib=1)   # 1 TFLOP/s, 1000 GB/s
    t_math, t_mem = r.time_bounds(44_728_320, 5_591_040, toy, "fp32")
    assert t_math == pytest.approx(44.7e-6, rel=1e-3)      # microseconds, not the seed's "44.8 ns"
    assert t_mem == pytest.approx(5.59e-6, rel=1e-3)


def test_utilization_and_limiter():
    assert r.utilization(200e9, 1e12) == pytest.approx(0.2)
    assert r.limiter(0.9, 0.1) == "math" and r.limiter(0.1, 0.9) == "memory"
    assert r.limiter(0.7, 0.7) == "both" and r.limiter(0.69, 0.2) == "latency"


@given(st.floats(1e-3, 1e5), st.sampled_from(["V100", "A100", "H100-SXM", "T4"]))
def test_roofline_is_continuous_and_capped(ai, gpu):
    y = r.attainable_flops(ai, gpu, "fp16")
    assert y <= peak_flops(gpu, "fp16") * (1 + 1e-12)
    assert y == pytest.approx(min(peak_flops(gpu, "fp16"), ai * peak_bandwidth(gpu)))


def test_bad_shapes_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="batch sizes differ"):
        r.conv2d_flops((1, 3, 8, 8), (2, 4, 6, 6), 3)
    with pytest.raises(ValueError, match="groups"):
        r.conv2d_flops((1, 3, 8, 8), (1, 4, 6, 6), 3, groups=2)
    with pytest.raises(ValueError, match="positive"):
        r.linear_flops(0, 3, 4)
    with pytest.raises(ValueError, match="4 entries"):
        r.conv2d_flops((3, 8, 8), (1, 4, 6, 6), 3)


def test_roofline_plot_draws_the_roof_and_the_ops():
    ops = [r.Op("relu", *(1e6, 4e6)), r.Op("gemm", 2e12, 1e9)]
    ax = r.roofline_plot("A100", "fp16", ops)
    x, y = (np.asarray(v) for v in ax.lines[0].get_data())
    assert ax.get_xscale() == ax.get_yscale() == "log"
    np.testing.assert_allclose(y, np.minimum(peak_flops("A100", "fp16"), x * peak_bandwidth("A100")))
    markers = {(float(l.get_xdata()[0]), float(l.get_ydata()[0])) for l in ax.lines[1:] if len(l.get_xdata()) == 1}
    for op in ops:
        want = (op.intensity, min(peak_flops("A100", "fp16"), op.intensity * peak_bandwidth("A100")))
        assert any(np.isclose(m[0], want[0]) and np.isclose(m[1], want[1]) for m in markers), op.name


def test_roof_from_the_peaks_is_elementwise_and_agrees_with_the_spec_functions():
    peak, bw = peak_flops("A100", "fp16"), peak_bandwidth("A100")
    got = r.roof(np.array([1.0, 1e4]), peak, bw)
    assert got[0] == pytest.approx(1.0 * bw) and got[1] == pytest.approx(peak)     # slope, then flat
    assert r.attainable_flops(1.0, "A100", "fp16") == pytest.approx(bw)
    assert r.bound_from_peaks(10.0, 10.0, peak, bw) == "memory" == r.bound(10.0, 10.0, "A100", "fp16")
    assert r.bound_from_peaks(1e6, 1.0, peak, bw) == "compute"
