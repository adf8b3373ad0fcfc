"""The lectures' counts and intensity table: lab01's roofline model (``gpudl_instructor.references.lab01``,
``ref``) and the byte counts and chart the course keeps (``gpudl.roofline``)."""
from __future__ import annotations

import dataclasses

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, strategies as st  # noqa: E402

from gpudl import hardware, roofline as r  # noqa: E402
from gpudl.hardware import peak_bandwidth, peak_flops  # noqa: E402
from gpudl_instructor.references import lab01 as ref  # noqa: E402


def test_the_seeds_conv_example():
    # seed 000: ((3x3)x3 + 1) x 16 x 208 x 240 x 2 = 44,728,320; FP32 input 2,396,160 B, output 3,194,880 B, 448 params
    assert ref.conv2d_flops((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True) == 44_728_320
    assert r.tensor_bytes((1, 3, 416, 480), "fp32") == 2_396_160
    assert r.tensor_bytes((1, 16, 208, 240), "fp32") == 3_194_880
    assert r.conv2d_bytes((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True, include_weights=False) == 5_591_040
    assert r.conv2d_bytes((1, 3, 416, 480), (1, 16, 208, 240), 3, bias=True) == 5_591_040 + 448 * 4


def test_conv_without_bias_and_with_groups():
    assert ref.conv2d_flops((1, 3, 416, 480), (1, 16, 208, 240), 3) == 2 * 27 * 16 * 208 * 240
    # depthwise: each output channel sees one input channel
    assert ref.conv2d_flops((2, 8, 10, 10), (2, 8, 8, 8), 3, groups=8) == 2 * 9 * 2 * 8 * 8 * 8


@pytest.mark.parametrize("batch, intensity, label", [(512, 315, "compute"), (1, 1, "memory")])
def test_the_seeds_linear_layer_on_a_v100(batch, intensity, label):
    f, b = ref.linear_flops(batch, 1024, 4096), ref.linear_bytes(batch, 1024, 4096, "fp16")
    assert ref.arithmetic_intensity(f, b) == pytest.approx(intensity, rel=0.01)
    assert ref.linear_intensity(batch, 1024, 4096, 2) == ref.arithmetic_intensity(f, b)
    assert ref.bound(f, b, "V100", "fp16") == label


def test_the_seeds_memory_bound_ops():
    n = 64 * 56 * 56
    assert r.Op("pool", r.pool2d_flops(n, 3), r.pool2d_bytes(n, n, "fp16")).intensity == pytest.approx(2.25)
    assert r.Op("relu", r.elementwise_flops(n), r.elementwise_bytes(n, "fp16")).intensity == pytest.approx(0.25)
    ln = ref.arithmetic_intensity(r.layer_norm_flops(512, 1024), r.layer_norm_bytes(512, 1024, "fp16"))
    assert 0 < ln < 10
    for f, b in [(r.pool2d_flops(n, 3), r.pool2d_bytes(n, n)), (r.layer_norm_flops(512, 1024), r.layer_norm_bytes(512, 1024))]:
        assert ref.bound(f, b, "V100", "fp16") == "memory"


def test_seed_arithmetic_intensity_example():
    assert ref.arithmetic_intensity(32, 17) == pytest.approx(1.88, abs=0.005)
    assert r.Op("example", 32, 17).intensity == ref.arithmetic_intensity(32, 17)


def test_time_bounds_correct_the_seeds_units():
    from gpudl.hardware import GPUSpec
    toy = GPUSpec(name="toy", architecture="toy", compute_capability=(0, 0), sms=1, cuda_fma_per_sm={"fp32": 1},
                  tensor_fma_per_sm={}, boost_clock_mhz=0.5e6, memory_bandwidth_gbs=1000, memory_gib=1,
                  l2_kib=1, smem_per_sm_kib=1, registers_per_sm_kib=1)   # 1 TFLOP/s, 1000 GB/s
    t_math, t_mem = ref.time_bounds(44_728_320, 5_591_040, toy, "fp32")
    assert t_math == pytest.approx(44.7e-6, rel=1e-3)      # microseconds, not the seed's "44.8 ns"
    assert t_mem == pytest.approx(5.59e-6, rel=1e-3)


def test_utilization_and_limiter():
    assert ref.utilization(200e9, 1e12) == pytest.approx(0.2)
    assert ref.limiter(0.9, 0.1) == "math" and ref.limiter(0.1, 0.9) == "memory"
    assert ref.limiter(0.7, 0.7) == "both" and ref.limiter(0.69, 0.2) == "latency"


@given(st.floats(1e-3, 1e5), st.sampled_from(["V100", "A100", "H100-SXM", "T4"]))
def test_roofline_is_continuous_and_capped(ai, gpu):
    y = ref.attainable_flops(ai, gpu, "fp16")
    assert y <= peak_flops(gpu, "fp16") * (1 + 1e-12)
    assert y == pytest.approx(min(peak_flops(gpu, "fp16"), ai * peak_bandwidth(gpu)))


def test_bad_shapes_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="batch sizes differ"):
        ref.conv2d_flops((1, 3, 8, 8), (2, 4, 6, 6), 3)
    with pytest.raises(ValueError, match="groups"):
        ref.conv2d_flops((1, 3, 8, 8), (1, 4, 6, 6), 3, groups=2)
    with pytest.raises(ValueError, match="positive"):
        ref.linear_flops(0, 3, 4)
    with pytest.raises(ValueError, match="4 entries"):
        ref.conv2d_flops((3, 8, 8), (1, 4, 6, 6), 3)
    with pytest.raises(ValueError, match="batch sizes differ"):
        r.conv2d_bytes((1, 3, 8, 8), (2, 4, 6, 6), 3)


def test_roofline_plot_draws_the_roof_and_the_ops():
    ops = [r.Op("relu", *(1e6, 4e6)), r.Op("gemm", 2e12, 1e9)]
    ax = r.roofline_plot("A100", "fp16", ops)
    x, y = (np.asarray(v) for v in ax.lines[0].get_data())
    assert ax.get_xscale() == ax.get_yscale() == "log"
    np.testing.assert_allclose(y, ref.roof(x, peak_flops("A100", "fp16"), peak_bandwidth("A100")))
    markers = {(float(l.get_xdata()[0]), float(l.get_ydata()[0])) for l in ax.lines[1:] if len(l.get_xdata()) == 1}
    for op in ops:
        want = (op.intensity, ref.attainable_flops(op.intensity, "A100", "fp16"))
        assert any(np.isclose(m[0], want[0]) and np.isclose(m[1], want[1]) for m in markers), op.name


def test_roofline_plot_draws_real_gpus_only():
    """The chart takes its peaks from the datasheets: it cannot draw a GPU of made-up units (lab01's exercise)."""
    made_up = dataclasses.replace(hardware.SPECS["V100"], name="made up", sms=3)
    with pytest.raises(ValueError, match="no recorded peaks"):
        r.roofline_plot(made_up, "fp16", [r.Op("relu", 1e6, 4e6)])


def test_the_model_is_not_in_the_course_edition():
    for name in ("conv2d_flops", "linear_flops", "linear_bytes", "arithmetic_intensity", "roof", "attainable_flops",
                 "bound_from_peaks", "bound", "time_bounds", "utilization", "limiter"):
        assert not hasattr(r, name), f"gpudl.roofline.{name} answers lab01: it belongs in the instructor's references"


def test_roof_from_the_peaks_is_elementwise_and_agrees_with_the_spec_functions():
    peak, bw = peak_flops("A100", "fp16"), peak_bandwidth("A100")
    got = ref.roof(np.array([1.0, 1e4]), peak, bw)
    assert got[0] == pytest.approx(1.0 * bw) and got[1] == pytest.approx(peak)     # slope, then flat
    assert ref.attainable_flops(1.0, "A100", "fp16") == pytest.approx(bw)
    assert ref.bound_from_peaks(10.0, 10.0, peak, bw) == "memory" == ref.bound(10.0, 10.0, "A100", "fp16")
    assert ref.bound_from_peaks(1e6, 1.0, peak, bw) == "compute"
