"""gpudl.mixed_precision and lab 08's references of it: tensor-core emulation (the references), the split
trick, MMA arithmetic, the loss scaler step for step against torch.amp.GradScaler (the reference, and the
visible check's oracle made of GradScaler's kernels), and mixed-precision training."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from gpudl import formats as F
from gpudl import hardware
from gpudl import mixed_precision as M
from gpudl_instructor.references import lab08 as R

CUDA = torch.cuda.is_available()


def _rand(g, *shape, positive=False):
    return (g.random(shape) if positive else g.standard_normal(shape)).astype(np.float32)


# --- tensor-core arithmetic ------------------------------------------------------------------

@pytest.mark.parametrize("inputs, cast", [("fp16", np.float16), ("fp32", np.float32)])
def test_fp32_accumulation_is_a_plain_float32_loop(inputs, cast):
    g = np.random.default_rng(0)
    a, b, c = _rand(g, 5, 37), _rand(g, 37, 3), _rand(g, 5, 3)
    a16, b16 = a.astype(cast).astype(np.float64), b.astype(cast).astype(np.float64)
    acc = c.copy()
    for k in range(37):                      # FMA: the exact product added to the FP32 sum, rounded once
        acc = (acc.astype(np.float64) + np.outer(a16[:, k], b16[k])).astype(np.float32)
    got = R.tensor_core_matmul(a, b, c, inputs=inputs)
    assert got.dtype == np.float32 and np.array_equal(got, acc)


def test_fp16_products_are_exact_in_fp32():
    g = np.random.default_rng(1)
    a, b = _rand(g, 8, 64).astype(np.float16), _rand(g, 64, 8).astype(np.float16)
    products = a.astype(np.float32)[:, :, None] * b.astype(np.float32)[None, :, :]
    assert np.array_equal(products.astype(np.float64), a.astype(np.float64)[:, :, None] * b.astype(np.float64)[None])


def test_fp16_accumulation_loses_long_dot_products():
    g = np.random.default_rng(2)
    errors = {}
    for acc in ("fp32", "fp16"):
        for k in (64, 4096):
            a, b = _rand(g, 1, k, positive=True), _rand(g, k, 1, positive=True)
            exact = a.astype(np.float64) @ b.astype(np.float64)
            errors[acc, k] = M.relative_error(R.tensor_core_matmul(a, b, accumulate=acc), exact)
    assert errors["fp16", 4096] > 0.05                 # the running sum stops growing once its ULP ~ the products
    assert errors["fp32", 4096] < 2e-3                 # what is left is the inputs' FP16 rounding
    assert errors["fp16", 4096] > 20 * errors["fp16", 64]


def test_exact_accumulation_and_blocks():
    g = np.random.default_rng(3)
    a, b = _rand(g, 6, 32), _rand(g, 32, 4)
    exact = R.tensor_core_matmul(a, b, inputs="bf16", accumulate="exact")
    ar, br = F.round_to(a, "bf16"), F.round_to(b, "bf16")
    assert np.array_equal(exact, (ar @ br).astype(np.float32))
    assert np.array_equal(R.tensor_core_matmul(a, b, inputs="bf16", block_k=32), exact)
    assert M.relative_error(R.tensor_core_matmul(a, b, inputs="bf16", block_k=4), exact) < 1e-6


def test_tf32_matmul_and_torch_rounding():
    g = np.random.default_rng(4)
    a, b = _rand(g, 16, 64), _rand(g, 64, 16)
    emulated = R.tf32_matmul(a, b)
    manual = (M.round_tf32_torch(torch.from_numpy(a)).double() @ M.round_tf32_torch(torch.from_numpy(b)).double())
    assert np.array_equal(emulated, manual.float().numpy())
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert 1e-5 < M.relative_error(emulated, exact) < 2e-3                # FP16's mantissa, FP32's range
    assert M.relative_error(R.tf32_matmul(a * 1e30, b), exact * 1e30) < 2e-3


def test_the_split_recovers_most_of_fp32():
    g = np.random.default_rng(5)
    a, b = _rand(g, 24, 128), _rand(g, 128, 24)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    err = {(fmt, t): M.relative_error(M.split_matmul(a, b, inputs=fmt, terms=t), exact)
           for fmt in ("bf16", "tf32") for t in (1, 3)}
    fp32 = M.relative_error(a @ b, exact)
    assert err["bf16", 3] < err["bf16", 1] / 50          # 16 significant bits instead of 8
    assert err["tf32", 3] < err["tf32", 1] / 100         # 22 bits, within a few times FP32's own error
    assert err["tf32", 3] < 10 * fp32
    hi, lo = M.split(a, "tf32")
    assert np.all(np.abs(a - (hi + lo)) <= np.abs(a) * 2.0**-21)


def test_mma_arithmetic_reuses_hardware():
    assert M.TENSOR_CORES["Volta"].shape.fma == 64 and M.TENSOR_CORES["Ampere"].shape.fma == 256
    for arch, gpu in (("Volta", "V100"), ("Ampere", "A100")):
        assert M.tensor_core_fma_per_sm(arch) == hardware.SPECS[gpu].tensor_fma_per_sm["fp16"]
    assert round(M.tensor_core_peak("Volta") / 1e12) == 125
    assert round(M.tensor_core_peak("Ampere") / 1e12) == 312


def test_mac_table_agrees_with_the_lecture_where_hardware_has_a_rate():
    ours = M.mac_table()
    compared = 0
    for arch, row in M.LECTURE_MAC_TABLE.items():
        for col, printed in row.items():
            if ours[arch][col] is not None:
                assert ours[arch][col] == printed, (arch, col)
                compared += 1
    assert compared >= 15


def test_the_throughput_ladder_of_the_a100():
    ladder = {(r["mode"], r["sparse"]): r["x_fp32"] for r in M.throughput_ladder("A100")}
    assert round(ladder["tf32", False]) == 8 and round(ladder["fp16", False]) == 16
    assert round(ladder["fp16", True]) == 32 and ("fp8", False) not in ladder
    h100 = {(r["mode"], r["sparse"]): r["peak_flops"] for r in M.throughput_ladder("H100-SXM")}
    assert h100["fp8", False] == 2 * h100["fp16", False] and h100["fp8", True] == 2 * h100["fp8", False]


# --- the loss scaler against torch.amp.GradScaler ---------------------------------------------

def _planted(steps: int, overflow_at: set[int], seed: int = 0) -> list[np.ndarray]:
    g = np.random.default_rng(seed)
    out = []
    for t in range(steps):
        grad = (g.standard_normal(6) * 1e-3).astype(np.float32)
        if t in overflow_at:
            grad[int(g.integers(6))] = [np.inf, -np.inf, np.nan][t % 3]
        out.append(grad)
    return out


def _torch_trajectory(grads, **kwargs):
    """GradScaler on the CPU (torch.amp.GradScaler("cpu")), driving SGD on one parameter vector."""
    p = torch.nn.Parameter(torch.zeros(6))
    opt = torch.optim.SGD([p], lr=0.5)
    scaler = torch.amp.GradScaler("cpu", **kwargs)
    out = []
    for grad in grads:
        scaler.scale(torch.ones(()))                        # creates the scale on first use
        scale = scaler.get_scale()
        opt.zero_grad()
        p.grad = torch.from_numpy(grad) * torch.tensor(scale, dtype=torch.float32)   # the scaled loss's gradient
        scaler.step(opt)
        scaler.update()
        out.append((scaler.get_scale(), int(scaler.state_dict()["_growth_tracker"]), p.detach().clone().numpy()))
    return out


def _gpudl_trajectory(grads, **kwargs):
    init = kwargs.pop("init_scale", M.INIT_SCALE)
    state, master = M.ScalerState(init), np.zeros(6, np.float32)
    out = []
    for grad in grads:
        scaled = grad * np.float32(state.scale)
        state, update = R.scaler_step(state, [scaled], **kwargs)
        if update is not None:
            master = master - np.float32(0.5) * update[0]
        out.append((state.scale, state.growth_tracker, master.copy()))
    return out


@pytest.mark.parametrize("kwargs, steps, overflows", [
    ({"growth_interval": 3}, 40, {2, 3, 9, 10, 11, 25}),
    ({"growth_interval": 1, "growth_factor": 4.0, "backoff_factor": 0.25, "init_scale": 8.0}, 20, {5, 6, 15}),
    ({}, 2010, {0, 1, 2005}),                              # GradScaler's own constants: growth after 2000 clean steps
])
def test_the_scaler_matches_gradscaler_step_for_step(kwargs, steps, overflows):
    grads = _planted(steps, overflows)
    theirs = _torch_trajectory(grads, **kwargs)
    mine = _gpudl_trajectory(grads, **kwargs)
    for t, ((s1, k1, p1), (s2, k2, p2)) in enumerate(zip(theirs, mine)):
        assert (s1, k1) == (s2, k2), f"step {t}: GradScaler has scale {s1}, tracker {k1}; gpudl {s2}, {k2}"
        assert np.array_equal(p1, p2), f"step {t}: the weights differ"
    scales = [kwargs.get("init_scale", M.INIT_SCALE)] + [s for s, _, _ in mine]
    steps_up = [b > a for a, b in zip(scales, scales[1:])]
    steps_down = [b < a for a, b in zip(scales, scales[1:])]
    assert any(steps_up) and any(steps_down)                # the sequence exercised growth and backoff


def test_the_visible_oracle_is_gradscalers_step_and_the_reference():
    from gpudl.grading import lab08

    g = np.random.default_rng(7)
    for kwargs, start, overflows in (({"growth_interval": 3}, 0, {2, 3, 9}), ({}, 1996, {5}),
                                     ({"growth_interval": 4, "growth_factor": 4.0, "backoff_factor": 0.25}, 0,
                                      {0, 1, 6, 13, 14})):
        state = M.ScalerState(M.INIT_SCALE, start)
        for grads in lab08._scaler_sequence(g, 20, overflows):
            scaled = [gr * np.float32(state.scale) for gr in grads]
            theirs, their_update = lab08._GradScaler.scaler_step(state, scaled, **kwargs)
            with np.errstate(invalid="ignore"):
                mine, my_update = R.scaler_step(state, scaled, **kwargs)
            assert theirs == mine
            assert (their_update is None) == (my_update is None)
            if my_update is not None:
                assert all(np.array_equal(a, b) for a, b in zip(their_update, my_update))
            state = mine


def test_gradscaler_constants():
    s = torch.amp.GradScaler("cpu")
    assert (s._init_scale, s._growth_factor, s._backoff_factor, s._growth_interval) == (
        M.INIT_SCALE, M.GROWTH_FACTOR, M.BACKOFF_FACTOR, M.GROWTH_INTERVAL)


def test_scaler_rules():
    s = R.update_scale(M.ScalerState(2.0**16, 1999), False)
    assert (s.scale, s.growth_tracker) == (2.0**17, 0)
    s = R.update_scale(M.ScalerState(2.0**16, 1500), True)
    assert (s.scale, s.growth_tracker) == (2.0**15, 0)
    top = R.update_scale(M.ScalerState(float(np.finfo(np.float32).max), 0), False, growth_interval=1)
    assert top.scale == float(np.finfo(np.float32).max)     # growth that would overflow FP32 is not kept
    state, update = R.scaler_step(M.ScalerState(4.0), [np.array([4.0, 8.0], np.float32)])
    assert update[0].tolist() == [1.0, 2.0] and state.growth_tracker == 1
    state, update = R.scaler_step(M.ScalerState(4.0), [np.array([np.inf], np.float32)])
    assert update is None and state.scale == 2.0
    with pytest.raises(ValueError):
        M.ScalerState(0.0)


# --- training ---------------------------------------------------------------------------------

def test_fp16_without_scaling_loses_gradients_and_scaling_recovers_them():
    kw = dict(steps=120, growth_interval=5, loss_weight=2.0**-16, n=128)
    fp32, fp16, scaled = (M.train_mixed_precision(mode, **kw) for mode in ("fp32", "fp16", "fp16-scaled"))
    assert max(fp32.zero_grad_fraction) == 0.0
    assert np.mean(fp16.zero_grad_fraction) > 0.5
    assert np.mean(scaled.zero_grad_fraction) < 0.01
    assert any(scaled.skipped) and not any(fp16.skipped)
    assert scaled.scale[0] == M.INIT_SCALE and max(scaled.scale) > M.INIT_SCALE
    assert scaled.final_loss < 1.2 * fp32.final_loss


def test_bad_arguments():
    with pytest.raises(ValueError, match="accumulate"):
        R.tensor_core_matmul(np.ones((2, 2)), np.ones((2, 2)), accumulate="fp8")
    with pytest.raises(ValueError, match="need A"):
        R.tensor_core_matmul(np.ones((2, 3)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="mode"):
        M.train_mixed_precision("int8")


def test_fp8_matmul_with_per_tensor_scales():
    a, b = torch.randn(64, 128) * 50, torch.randn(128, 32) * 0.01
    a8, scale = M.to_fp8(a)
    assert a8.dtype == torch.float8_e4m3fn and (a8.float().abs().max() * scale - a.abs().max()).abs() < 1e-3 * a.abs().max()
    try:
        out = M.fp8_matmul(a, b)
    except RuntimeError as exc:                                    # a torch build without CPU _scaled_mm
        pytest.skip(f"torch._scaled_mm unavailable here: {exc}")
    ref = a.double() @ b.double()
    assert out.dtype == torch.bfloat16
    assert ((out.double() - ref).norm() / ref.norm()).item() < 0.1     # E4M3: 3 mantissa bits


def test_precision_benchmark_quick_is_the_cpu_version():
    from gpudl import benchmarks

    table = benchmarks.run("precision", ["--quick"])
    parts = {r["part"] for r in table.rows}
    assert parts == {"TF32 in ULPs", "ladder", "2:4 vs dense"}
    one_order = next(r for r in table.rows if "FP32 sum vs one rounding" in r["case"] and "uniform" in r["case"])
    assert 0 < one_order["max_ulp"] < 100                    # an accumulation order costs a few ULPs, not more
    assert any("CUDA" in n for n in table.notes)              # 2:4 semi-structured: why not, on a CPU
    assert set(table.figures) >= {"precision_ladder"}


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (cuBLAS in TF32 mode)")
def test_tf32_emulation_is_what_cublas_computes():
    from gpudl.bench import allow_tf32

    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(512, 1024, device="cuda", generator=g)
    b = torch.randn(1024, 512, device="cuda", generator=g)
    with allow_tf32(True):
        tf32 = a @ b
    emulated = (M.round_tf32_torch(a).double() @ M.round_tf32_torch(b).double()).float()
    exact = a.double() @ b.double()
    off_emulation = ((tf32.double() - emulated.double()).norm() / emulated.double().norm()).item()
    off_fp32 = ((tf32.double() - exact).norm() / exact.norm()).item()
    assert off_fp32 > 1e-5                                   # TF32 really ran (not FP32)
    assert off_emulation < off_fp32 / 20                     # and the emulation explains what it did
