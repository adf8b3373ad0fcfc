"""Lab 06's references (gpudl_instructor.references.lab06) and the course's torch oracle (gpudl.lstm):
the lecture's worked example to its printed digits, central differences on tiny cases,
torch.nn.LSTM's autograd on random batches, every fast path against the stepwise reference, and
the recorded calls the checks replay in place of a student's earlier exercise."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from gpudl import benchmarks, lstm
from gpudl_instructor.references import lab06 as ref
from gpudl.grading import numerical_gradient, tolerance

SEED_TOL = 1e-4        # the slides round every intermediate to 4-5 digits
IMPLEMENTATIONS = {
    "fused": lambda *a: ref.lstm_forward(*a)[:2],
    "stepwise": lambda *a: ref.lstm_forward_stepwise(*a)[:2],
    "per_gate": ref.lstm_forward_per_gate,
}


def _random(T, N, D, H, seed=0, dtype=np.float64, scale=1.0):
    g = np.random.default_rng(seed)
    shapes = [(T, N, D), (N, H), (N, H), (4 * H, D), (4 * H, H), (4 * H,)]
    return [(scale * g.standard_normal(s)).astype(dtype) for s in shapes]


def _seed():
    e = lstm.seed_example()
    return e, (e["x"], e["h0"], e["c0"], e["W"], e["U"], e["b"])


def _close_seed(actual, printed):
    np.testing.assert_allclose(np.asarray(actual, dtype=float).reshape(np.shape(printed)), printed, rtol=0, atol=SEED_TOL)


# --- the lecture's example, to its printed digits ------------------------------------------

@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_seed_forward_outputs_and_states(impl):
    p = lstm.seed_printed()
    _, args = _seed()
    out, (h_T, c_T) = IMPLEMENTATIONS[impl](*args)
    _close_seed(out[:, 0, 0], [p["out_0"], p["out_1"]])
    _close_seed(h_T, p["out_1"])
    _close_seed(c_T, p["state_1"])


def test_seed_forward_gates_in_cache():
    p = lstm.seed_printed()
    _, args = _seed()
    _, _, cache = ref.lstm_forward(*args)
    _close_seed(cache.gates[0, 0], p["gates_0"])
    _close_seed(cache.gates[1, 0], p["gates_1"])
    _close_seed(cache.c[1:, 0, 0], [p["state_0"], p["state_1"]])
    _, _, caches = ref.lstm_forward_stepwise(*args)
    for t in (0, 1):
        _close_seed([caches[t][g][0, 0] for g in lstm.GATES], p[f"gates_{t}"])


def test_seed_label_is_plus_1_25():
    """The slide says Y1 = -1.25 but computes Delta_1 = 0.77197 - 1.25: the label it uses is +1.25."""
    p = lstm.seed_printed()
    e, _ = _seed()
    _close_seed(p["out_1"] - e["y"][1, 0, 0], p["Delta_1"])
    _close_seed(p["out_0"] - e["y"][0, 0, 0], p["Delta_0"])


@pytest.mark.parametrize("impl", ["fused", "stepwise"])
def test_seed_backward_through_time(impl):
    p = lstm.seed_printed()
    e, args = _seed()
    if impl == "fused":
        out, _, cache = ref.lstm_forward(*args)
        grads = ref.lstm_backward(out - e["y"], cache)
    else:
        out, _, caches = ref.lstm_forward_stepwise(*args)
        grads = ref.lstm_backward_stepwise(out - e["y"], caches)
    dx, dh0, dc0, dW, dU, db = grads
    _close_seed(dx[:, 0], [p["delta_x_0"], p["delta_x_1"]])
    _close_seed(dh0, p["delta_out_prev_0"])
    # the seed prints delta state_0; what reaches c_{-1} is delta state_0 * f_0
    _close_seed(dc0, p["delta_state_0"] * p["gates_0"][2])
    _close_seed(dW, p["dW"])
    _close_seed(dU, p["dU"])
    _close_seed(db, p["db"])


def test_seed_backward_step_by_step():
    """The slides' intermediate values at t = 1 and t = 0, through lstm_cell_backward."""
    p = lstm.seed_printed()
    e, args = _seed()
    _, _, caches = ref.lstm_forward_stepwise(*args)
    f1, f0 = p["gates_1"][2], p["gates_0"][2]
    dx1, dh_prev1, dc_prev1, dW1, dU1, db1 = ref.lstm_cell_backward(np.array([[p["Delta_1"]]]), np.zeros((1, 1)), caches[1])
    _close_seed(db1, p["delta_gates_1"])
    _close_seed(dc_prev1 / f1, p["delta_state_1"])
    _close_seed(dx1, p["delta_x_1"])
    _close_seed(dh_prev1, p["delta_out_prev_1"])
    _close_seed(dU1, p["dU"])     # only step 1 contributes to dU: out_{-1} = 0
    _close_seed(p["Delta_0"] + p["delta_out_prev_1"], p["delta_out_0"])
    dx0, dh_prev0, dc_prev0, dW0, dU0, db0 = ref.lstm_cell_backward(
        np.array([[p["delta_out_0"]]]), np.array([[p["delta_state_1"] * f1]]), caches[0])
    _close_seed(db0, p["delta_gates_0"])
    _close_seed(dc_prev0 / f0, p["delta_state_0"])
    _close_seed(dx0, p["delta_x_0"])
    _close_seed(dh_prev0, p["delta_out_prev_0"])
    np.testing.assert_array_equal(dU0, 0.0)


def test_seed_update():
    p = lstm.seed_printed()
    e, args = _seed()
    out, _, cache = ref.lstm_forward(*args)
    g = ref.lstm_backward(out - e["y"], cache)
    new = ref.sgd_step({"W": e["W"], "U": e["U"], "b": e["b"]}, {"W": g.dW, "U": g.dU, "b": g.db}, e["lr"])
    _close_seed(new["W"], p["new_W"])
    _close_seed(new["U"], p["new_U"])
    _close_seed(new["b"], p["new_b"])
    # and from the seed's own printed gradients
    new = ref.sgd_step({"W": e["W"], "U": e["U"], "b": e["b"]}, {"W": p["dW"], "U": p["dU"], "b": p["db"]}, e["lr"])
    _close_seed(new["W"], p["new_W"])
    _close_seed(new["b"], p["new_b"])


# --- central differences -------------------------------------------------------------------

def _loss(args, dout, dh_last, dc_last):
    out, (h_T, c_T) = ref.lstm_forward_per_gate(*args)
    return float(np.sum(out * dout) + np.sum(h_T * dh_last) + np.sum(c_T * dc_last))


def _central_differences(args, dout, dh_last, dc_last, eps=1e-6):
    return numerical_gradient(lambda: _loss(args, dout, dh_last, dc_last), args, eps)


@pytest.mark.parametrize("T,N,D,H", [(1, 1, 1, 1), (3, 2, 2, 3), (4, 1, 3, 2), (2, 3, 1, 1)])
@pytest.mark.parametrize("impl", ["fused", "stepwise"])
def test_gradients_match_central_differences(T, N, D, H, impl):
    args = _random(T, N, D, H, seed=T * 100 + N * 10 + H)
    g = np.random.default_rng(7)
    dout, dh_last, dc_last = g.standard_normal((T, N, H)), g.standard_normal((N, H)), g.standard_normal((N, H))
    numeric = _central_differences([a.copy() for a in args], dout, dh_last, dc_last)
    if impl == "fused":
        _, _, cache = ref.lstm_forward(*args)
        analytic = ref.lstm_backward(dout, cache, dh_last, dc_last)
    else:
        _, _, caches = ref.lstm_forward_stepwise(*args)
        analytic = ref.lstm_backward_stepwise(dout, caches, dh_last, dc_last)
    for name, a, n in zip(("dx", "dh0", "dc0", "dW", "dU", "db"), analytic, numeric):
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-8, err_msg=name)


def test_cell_backward_matches_central_differences():
    g = np.random.default_rng(3)
    N, D, H = 2, 3, 2
    x, h, c = g.standard_normal((N, D)), g.standard_normal((N, H)), g.standard_normal((N, H))
    W, U, b = g.standard_normal((4 * H, D)), g.standard_normal((4 * H, H)), g.standard_normal(4 * H)
    dh, dc = g.standard_normal((N, H)), g.standard_normal((N, H))
    args = [x, h, c, W, U, b]

    def loss():
        h1, c1, _ = ref.lstm_cell_forward(*args)
        return float(np.sum(h1 * dh) + np.sum(c1 * dc))

    _, _, cache = ref.lstm_cell_forward(*args)
    analytic = ref.lstm_cell_backward(dh, dc, cache)
    for numeric, grad in zip(numerical_gradient(loss, args), analytic[:6]):
        np.testing.assert_allclose(numeric, grad, rtol=0, atol=1e-7)


# --- torch.nn.LSTM -----------------------------------------------------------------------------

def _torch_grads(args, dout, dh_last, dc_last, device="cpu"):
    x, h0, c0, W, U, b = args
    module = lstm.torch_lstm(W, U, b, dtype=torch.float64, device=device)
    tx, th, tc = (torch.tensor(v, device=device, requires_grad=True) for v in (x, h0, c0))
    out, (h_n, c_n) = module(tx, (th[None], tc[None]))
    loss = ((out * torch.tensor(dout, device=device)).sum() + (h_n[0] * torch.tensor(dh_last, device=device)).sum()
            + (c_n[0] * torch.tensor(dc_last, device=device)).sum())
    loss.backward()
    grads = {"weight_ih_l0": module.weight_ih_l0.grad, "weight_hh_l0": module.weight_hh_l0.grad,
             "bias_ih_l0": module.bias_ih_l0.grad, "bias_hh_l0": torch.zeros_like(module.bias_hh_l0.grad)}
    dW, dU, db = ref.from_torch({k: v.cpu() for k, v in grads.items()})
    # both biases get the same gradient; from_torch sums them, so take bias_ih's alone
    np.testing.assert_allclose(module.bias_ih_l0.grad.cpu().numpy(), module.bias_hh_l0.grad.cpu().numpy())
    fwd = (out.detach().cpu().numpy(), h_n[0].detach().cpu().numpy(), c_n[0].detach().cpu().numpy())
    return fwd, (tx.grad.cpu().numpy(), th.grad.cpu().numpy(), tc.grad.cpu().numpy(), dW, dU, db)


@pytest.mark.parametrize("T,N,D,H", [(7, 5, 6, 4), (1, 3, 2, 5), (12, 8, 16, 9)])
def test_forward_and_backward_match_torch_autograd(T, N, D, H):
    args = _random(T, N, D, H, seed=T + N + D + H, scale=0.7)
    g = np.random.default_rng(11)
    dout, dh_last, dc_last = g.standard_normal((T, N, H)), g.standard_normal((N, H)), g.standard_normal((N, H))
    (t_out, t_h, t_c), t_grads = _torch_grads(args, dout, dh_last, dc_last)
    out, (h_T, c_T), cache = ref.lstm_forward(*args)
    rtol, atol = tolerance("fp64", k=D + H)
    for mine, theirs in zip((out, h_T, c_T), (t_out, t_h, t_c)):
        np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=atol)
    grads = ref.lstm_backward(dout, cache, dh_last, dc_last)
    rtol, atol = tolerance("fp64", k=T * N * 4 * H)
    for name, mine, theirs in zip(ref.LSTMGrads._fields, grads, t_grads):
        np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=atol * max(1.0, np.abs(theirs).max()), err_msg=name)


def test_torch_loop_matches_nn_lstm():
    T, N, D, H = 6, 4, 5, 3
    args = _random(T, N, D, H, seed=5)
    module = lstm.torch_lstm(*args[3:], dtype=torch.float64)
    tx, th, tc = (torch.tensor(v) for v in args[:3])
    W, U, b = (torch.tensor(v, requires_grad=True) for v in args[3:])
    out, (h_T, c_T) = ref.lstm_torch_loop(tx, th, tc, W, U, b)
    want, (h_n, c_n) = module(tx, (th[None], tc[None]))
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(c_T, c_n[0])
    out.sum().backward()
    want.sum().backward()
    dW, dU, db = ref.from_torch({"weight_ih_l0": module.weight_ih_l0.grad, "weight_hh_l0": module.weight_hh_l0.grad,
                                  "bias_ih_l0": module.bias_ih_l0.grad})
    np.testing.assert_allclose(W.grad.numpy(), dW, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(U.grad.numpy(), dU, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), db, rtol=1e-10, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_torch_loop_and_cudnn_match_numpy():
    T, N, D, H = 9, 4, 7, 5
    args = _random(T, N, D, H, seed=9, scale=0.5)
    g = np.random.default_rng(2)
    dout, dh_last, dc_last = g.standard_normal((T, N, H)), g.standard_normal((N, H)), g.standard_normal((N, H))
    (t_out, _, _), t_grads = _torch_grads(args, dout, dh_last, dc_last, device="cuda")   # cuDNN, fp64
    out, _, cache = ref.lstm_forward(*args)
    np.testing.assert_allclose(out, t_out, rtol=1e-10, atol=1e-12)
    for name, mine, theirs in zip(ref.LSTMGrads._fields, ref.lstm_backward(dout, cache, dh_last, dc_last), t_grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-9, atol=1e-11, err_msg=name)
    cu = [torch.tensor(v, device="cuda") for v in args]
    loop_out, _ = ref.lstm_torch_loop(*cu)
    np.testing.assert_allclose(loop_out.cpu().numpy(), out, rtol=1e-10, atol=1e-12)


# --- conversion to and from torch -------------------------------------------------------------

def test_torch_gate_order_is_i_f_g_o():
    H = 3
    W = np.repeat(np.arange(4.0), H)[:, None] * np.ones((1, 2))      # block k holds the value k: a=0, i=1, f=2, o=3
    U = np.repeat(np.arange(4.0), H)[:, None] * np.ones((1, H))
    b = np.repeat(np.arange(4.0), H)
    t = ref.to_torch(W, U, b)
    # torch documents weight_ih_l0 as (W_ii | W_if | W_ig | W_io): i, f, g (= a), o
    np.testing.assert_array_equal(t["weight_ih_l0"][:, 0], np.repeat([1.0, 2.0, 0.0, 3.0], H))
    np.testing.assert_array_equal(t["weight_hh_l0"][:, 0], np.repeat([1.0, 2.0, 0.0, 3.0], H))
    np.testing.assert_array_equal(t["bias_ih_l0"] + t["bias_hh_l0"], np.repeat([1.0, 2.0, 0.0, 3.0], H))


def test_from_torch_inverts_to_torch_and_sums_biases():
    torch.manual_seed(0)
    module = torch.nn.LSTM(5, 4).double()
    W, U, b = ref.from_torch(module)
    state = module.state_dict()
    np.testing.assert_allclose(ref.to_torch(W, U, b)["weight_ih_l0"], state["weight_ih_l0"].numpy())
    np.testing.assert_allclose(ref.to_torch(W, U, b)["bias_ih_l0"],
                               (state["bias_ih_l0"] + state["bias_hh_l0"]).numpy())
    x = torch.randn(3, 2, 5, dtype=torch.float64)
    want, _ = module(x)
    out, _, _ = ref.lstm_forward(x.numpy(), np.zeros((2, 4)), np.zeros((2, 4)), W, U, b)
    np.testing.assert_allclose(out, want.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_from_torch_refuses_two_layers():
    with pytest.raises(ValueError, match="one-layer"):
        ref.from_torch(torch.nn.LSTM(3, 2, num_layers=2))


# --- the fast paths against the reference -------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 6), N=st.integers(1, 5), D=st.integers(1, 7), H=st.integers(1, 6), seed=st.integers(0, 10**6))
def test_fast_paths_match_stepwise_reference(T, N, D, H, seed):
    args = _random(T, N, D, H, seed=seed)
    ref_out, (ref_h, ref_c), caches = ref.lstm_forward_stepwise(*args)
    rtol, atol = tolerance("fp64", k=D + H)
    for impl in ("fused", "per_gate"):
        out, (h_T, c_T) = IMPLEMENTATIONS[impl](*args)
        np.testing.assert_allclose(out, ref_out, rtol=rtol, atol=atol)
        np.testing.assert_allclose(c_T, ref_c, rtol=rtol, atol=atol)
    g = np.random.default_rng(seed + 1)
    dout, dh_last, dc_last = g.standard_normal((T, N, H)), g.standard_normal((N, H)), g.standard_normal((N, H))
    _, _, cache = ref.lstm_forward(*args)
    fast = ref.lstm_backward(dout, cache, dh_last, dc_last)
    slow = ref.lstm_backward_stepwise(dout, caches, dh_last, dc_last)
    rtol, atol = tolerance("fp64", k=T * N * 4 * H)
    for name, a, b in zip(ref.LSTMGrads._fields, fast, slow):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * max(1.0, np.abs(b).max()), err_msg=name)


def test_float32_stays_float32_and_agrees_with_float64():
    T, N, D, H = 10, 6, 33, 17          # not multiples of anything
    args64 = _random(T, N, D, H, seed=1, scale=0.5)
    args32 = [a.astype(np.float32) for a in args64]
    out32, (_, c32), cache32 = ref.lstm_forward(*args32)
    out64, _, cache64 = ref.lstm_forward(*args64)
    assert out32.dtype == np.float32 and c32.dtype == np.float32
    rtol, atol = tolerance("fp32", k=T * (D + H))
    np.testing.assert_allclose(out32, out64, rtol=rtol, atol=atol)
    dout = np.random.default_rng(2).standard_normal((T, N, H))
    g32 = ref.lstm_backward(dout.astype(np.float32), cache32)
    g64 = ref.lstm_backward(dout, cache64)
    rtol, atol = tolerance("fp32", k=T * N * 4 * H)
    for name, a, b in zip(ref.LSTMGrads._fields, g32, g64):
        assert a.dtype == np.float32, name
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * np.abs(b).max(), err_msg=name)


def test_backward_without_dout_uses_only_final_state_gradients():
    args = _random(4, 2, 3, 2, seed=4)
    _, _, cache = ref.lstm_forward(*args)
    dh_last = np.ones((2, 2))
    a = ref.lstm_backward(None, cache, dh_last=dh_last)
    b = ref.lstm_backward(np.zeros((4, 2, 2)), cache, dh_last=dh_last)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert np.abs(a.dx[0]).sum() > 0        # the final state's gradient reached the first step


def test_cell_state_carries_gradient_with_a_high_forget_bias():
    """The point of the LSTM: with f near 1 the gradient reaches the first step nearly intact."""
    T, N, D, H = 40, 1, 2, 3
    x, h0, c0, W, U, b = _random(T, N, D, H, seed=8, scale=0.3)
    norms = {}
    for fb in (0.0, 6.0):
        b2 = b.copy()
        b2[2 * H:3 * H] = fb
        _, _, cache = ref.lstm_forward(x, h0, c0, W, U, b2)
        norms[fb] = np.abs(ref.lstm_backward(None, cache, dc_last=np.ones((N, H))).dc0).sum()
    assert norms[6.0] > 0.5 * H          # f ~ 0.9975 per step: 0.9975^40 ~ 0.9
    assert norms[0.0] < 1e-6             # f ~ 0.5 per step


# --- shapes, helpers, counts --------------------------------------------------------------------

def test_transposed_weights_are_explained():
    x, h0, c0, W, U, b = _random(3, 2, 5, 4)
    with pytest.raises(ValueError, match="transposed"):
        ref.lstm_forward(x, h0, c0, W.T, U, b)
    with pytest.raises(ValueError, match="transposed"):
        ref.lstm_cell_forward(x[0], h0, c0, W, U.T, b)
    with pytest.raises(ValueError, match=r"\(T, N, D\)"):
        ref.lstm_forward(x[0], h0, c0, W, U, b)
    with pytest.raises(ValueError, match="c0"):
        ref.lstm_forward(x, h0, c0[:1], W, U, b)


def test_sigmoid_is_stable_and_correct():
    z = np.array([-1000.0, -30.0, -1.0, 0.0, 2.0, 1000.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = lstm.sigmoid(z)
    np.testing.assert_allclose(s[1:5], 1 / (1 + np.exp(-z[1:5])), rtol=1e-12, atol=1e-15)
    assert s[0] == 0.0 and s[-1] == 1.0


def test_lstm_flops_by_hand():
    # the seed's example: 2 steps x 1 sequence x 4 gates x (2 inputs + 1 hidden) multiply-adds x 2
    assert ref.lstm_flops(2, 1, 2, 1) == 2 * 1 * 4 * 3 * 2
    assert ref.lstm_flops(64, 32, 256, 256, backward=True) == 3 * 2 * 64 * 32 * 1024 * 512
    with pytest.raises(ValueError):
        ref.lstm_flops(0, 1, 1, 1)


def test_sgd_step_returns_new_arrays():
    params = {"W": np.ones((2, 2)), "b": np.zeros(2)}
    new = ref.sgd_step(params, {"W": np.ones((2, 2)), "b": -np.ones(2)}, 0.5)
    np.testing.assert_array_equal(new["W"], 0.5)
    np.testing.assert_array_equal(new["b"], 0.5)
    np.testing.assert_array_equal(params["W"], 1.0)
    with pytest.raises(KeyError):
        ref.sgd_step(params, {"W": params["W"]}, 0.1)


def test_benchmark_returns_a_table():
    table = benchmarks.run("lstm", ["--quick", "-T", "3", "-N", "2", "-D", "8", "-H", "4", "--budget", "0.02"])
    names = [r["implementation"] for r in table.rows]
    assert names[:2] == ["torch nn.LSTM", "per-step loop of nn.LSTMCell"]
    assert all(r["median ms"] > 0 for r in table.rows)
    assert "LSTMCell" in table.to_text()


def test_benchmark_loop_and_module_compute_the_same():
    """The benchmark's two contestants hold the same weights: the loop of cells is nn.LSTM, step by step."""
    from gpudl.benchmarks import lstm as bench_lstm

    module, cell = bench_lstm._pair(5, 3, "cpu")
    x, h0, c0, _ = bench_lstm._inputs(4, 2, 5, 3, "cpu")
    with torch.no_grad():
        out, _ = module(x, (h0[None], c0[None]))
        h, c = h0, c0
        for t in range(4):
            h, c = cell(x[t], (h, c))
    torch.testing.assert_close(h, out[-1])


# --- the course's torch oracle ---------------------------------------------------------------------

def test_torch_lstm_call_matches_the_reference_and_its_gradients_come_in_our_order():
    T, N, D, H = 5, 3, 4, 2
    args = _random(T, N, D, H, seed=21)
    g = np.random.default_rng(22)
    dout, dh_last, dc_last = g.standard_normal((T, N, H)), g.standard_normal((N, H)), g.standard_normal((N, H))
    leaves = [torch.tensor(a, requires_grad=True) for a in args]
    out, (h_T, c_T) = lstm.torch_lstm_call(*leaves)
    r_out, (r_h, r_c), caches = ref.lstm_forward_stepwise(*args)
    for mine, theirs in ((out, r_out), (h_T, r_h), (c_T, r_c)):
        np.testing.assert_allclose(mine.detach().numpy(), theirs, rtol=1e-12, atol=1e-14)
    loss = (out * torch.tensor(dout)).sum() + (h_T * torch.tensor(dh_last)).sum() + (c_T * torch.tensor(dc_last)).sum()
    loss.backward()
    want_grads = ref.lstm_backward_stepwise(dout, caches, dh_last, dc_last)
    for name, leaf, want in zip(ref.LSTMGrads._fields, leaves, want_grads):
        np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=name)


def test_torch_lstm_holds_our_weights_in_torchs_order():
    args = _random(3, 2, 4, 3, seed=23)
    module = lstm.torch_lstm(*args[3:])
    state = ref.to_torch(*args[3:])
    for name, value in state.items():
        np.testing.assert_array_equal(getattr(module, name).detach().numpy(), value)
    assert module.weight_ih_l0.dtype == torch.float64
    with pytest.raises(ValueError, match="expected W"):
        lstm.torch_lstm(args[3].T, args[4], args[5])


# --- the calls the checks replay ------------------------------------------------------------------

def test_recorded_calls_are_the_calls_a_solution_makes():
    """lstm_forward_calls, lstm_backward_calls and train_step_calls record each call of the earlier
    exercise with the arguments the stepwise solution passes, and what the call returned."""
    args = _random(3, 2, 2, 3, seed=31)
    (out, (h_T, c_T), caches), calls = ref.lstm_forward_calls(*args)
    cells = calls["lstm_cell_forward"]
    assert len(cells) == 3
    for t, (a, kw, (h, c, cache)) in enumerate(cells):
        assert kw == {}
        np.testing.assert_array_equal(a[0], args[0][t])
        np.testing.assert_array_equal(a[1], args[1] if t == 0 else cells[t - 1][2][0])
        np.testing.assert_array_equal(a[2], args[2] if t == 0 else cells[t - 1][2][1])
        np.testing.assert_array_equal(h, out[t])
        assert cache is caches[t]
    dout = np.random.default_rng(32).standard_normal(out.shape)
    grads, bcalls = ref.lstm_backward_calls(dout, caches, None, None)
    steps = bcalls["lstm_cell_backward"]
    assert [a[2] is caches[t] for (a, _, _), t in zip(steps, (2, 1, 0))] == [True] * 3
    np.testing.assert_array_equal(steps[0][0][0], dout[2])
    np.testing.assert_array_equal(steps[1][0][0], dout[1] + steps[0][2][1])       # + dh_prev of step 2
    np.testing.assert_array_equal(steps[1][0][1], steps[0][2][2])                 # dc_prev of step 2
    for a, b in zip(grads, ref.lstm_backward(dout, ref.lstm_forward(*args)[2])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    params = {"W": args[3], "U": args[4], "b": args[5], "Why": np.ones((1, 3)), "by": np.zeros(1)}
    x, y = args[0], np.zeros((3, 2, 1))
    (loss, new), tcalls = ref.train_step_calls(params, x, y, 0.1)
    assert set(tcalls) == {"lstm_forward", "lstm_backward", "sgd_step"}
    (fa, _, _), = tcalls["lstm_forward"]
    np.testing.assert_array_equal(fa[1], np.zeros((2, 3)))
    (ba, _, _), = tcalls["lstm_backward"]
    assert ba[2:] == (None, None)
    (sa, _, sr), = tcalls["sgd_step"]
    assert sr is new and sa[2] == 0.1 and set(sa[1]) == set(params)
    r_loss, r_new = ref.train_step_reference(params, x, y, 0.1)
    assert loss == r_loss and all(np.array_equal(new[k], r_new[k]) for k in params)
