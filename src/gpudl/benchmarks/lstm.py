"""NumPy LSTM forward+backward vs torch.nn.LSTM (CPU); cuDNN vs a per-step torch loop (GPU).

Forward and backward of one LSTM layer, fp32: ``gpudl.lstm``'s fast path (one GEMM for the
input projection, one fused four-gate GEMM per step) and its stepwise loop of cells, against
``torch.nn.LSTM`` and a per-step torch loop with autograd; on a GPU, cuDNN's fused RNN against
the per-step loop.
"""
from __future__ import annotations

import argparse

import numpy as np

from .. import hardware, timing
from ..lstm import (from_torch, lstm_backward, lstm_backward_stepwise, lstm_flops, lstm_forward, lstm_forward_stepwise,
                    lstm_torch_loop, torch_lstm)
from ..table import Table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-T", type=int, default=None)
    p.add_argument("-N", type=int, default=None)
    p.add_argument("-D", type=int, default=None)
    p.add_argument("-H", type=int, default=None)
    p.add_argument("--tf32", action="store_true", help="allow TF32 on the GPU (default: off, true FP32)")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per row")


def run(args: argparse.Namespace) -> Table:
    import torch

    T = args.T or (16 if args.quick else 64)
    N = args.N or (16 if args.quick else 32)
    D = args.D or (128 if args.quick else 256)
    H = args.H or (128 if args.quick else 256)
    budget = args.budget or (0.5 if args.quick else 2.0)
    flops = lstm_flops(T, N, D, H, backward=True)
    table = Table(f"LSTM forward + backward, T={T} N={N} D={D} H={H}, fp32")
    g = np.random.default_rng(0)
    s = 1 / np.sqrt(H)
    x = g.standard_normal((T, N, D)).astype(np.float32)
    h0 = (0.1 * g.standard_normal((N, H))).astype(np.float32)
    c0 = (0.1 * g.standard_normal((N, H))).astype(np.float32)
    W = g.uniform(-s, s, (4 * H, D)).astype(np.float32)
    U = g.uniform(-s, s, (4 * H, H)).astype(np.float32)
    b = g.uniform(-s, s, 4 * H).astype(np.float32)
    dout = g.standard_normal((T, N, H)).astype(np.float32)

    def row(what: str, device: str, m, base: float | None = None) -> dict:
        r = {"implementation": what, "device": device, "median ms": m.median * 1e3,
             "IQR ms": m.iqr * 1e3, "GFLOP/s": flops / m.median / 1e9, "runs": m.count}
        if base is not None:
            r["time / torch nn.LSTM"] = m.median / base
        return r

    def numpy_fast():
        _, _, cache = lstm_forward(x, h0, c0, W, U, b)
        lstm_backward(dout, cache)

    def numpy_stepwise():
        _, _, caches = lstm_forward_stepwise(x, h0, c0, W, U, b)
        lstm_backward_stepwise(dout, caches)

    # torch on the CPU: nn.LSTM (its fused CPU kernel) and the per-step loop, both with autograd
    cpu_threads = torch.get_num_threads()
    lstm_cpu = torch_lstm(W, U, b, dtype=torch.float32)
    tx = torch.from_numpy(x).requires_grad_()
    th0, tc0 = torch.from_numpy(h0).requires_grad_(), torch.from_numpy(c0).requires_grad_()
    tdout = torch.from_numpy(dout)

    def torch_module(module, xx, hh, cc, dd):
        def run():
            out, _ = module(xx, (hh[None], cc[None]))
            out.backward(dd)
        return run

    def torch_loop(params, xx, hh, cc, dd):
        def run():
            out, _ = lstm_torch_loop(xx, hh, cc, *params)
            out.backward(dd)
        return run

    loop_params_cpu = [torch.from_numpy(v.copy()).requires_grad_() for v in (W, U, b)]
    m_torch = timing.time_cpu(torch_module(lstm_cpu, tx, th0, tc0, tdout), budget_s=budget, what="torch nn.LSTM")
    m_fast = timing.time_cpu(numpy_fast, budget_s=budget, what="numpy lstm_forward/backward")
    m_step = timing.time_cpu(numpy_stepwise, budget_s=budget, what="numpy stepwise")
    m_loop = timing.time_cpu(torch_loop(loop_params_cpu, tx, th0, tc0, tdout), budget_s=budget, what="torch loop")
    base = m_torch.median
    table.rows += [row("torch nn.LSTM", "cpu", m_torch, base),
                   row("numpy lstm_forward + lstm_backward (fused GEMMs)", "cpu", m_fast, base),
                   row("numpy stepwise (lstm_cell_forward/backward)", "cpu", m_step, base),
                   row("torch per-step loop + autograd", "cpu", m_loop, base)]
    table.notes.append(f"CPU: {cpu_threads} torch threads; FLOPs counted: the matrix products of forward + "
                       f"backward, {flops / 1e9:.3g} GFLOP.")
    table.notes.append("On cores shared with other busy processes, multithreaded BLAS calls (NumPy's OpenBLAS, "
                       "torch's) can stall for a scheduler time slice; for a clean comparison run with "
                       "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1.")

    if torch.cuda.is_available():
        dev = "cuda"
        prev = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
        try:
            sizes = [(T, N, D, H)] + ([] if args.quick else [(T, 256, 1024, 1024)])
            for (Tg, Ng, Dg, Hg) in sizes:
                fl = lstm_flops(Tg, Ng, Dg, Hg, backward=True)
                gg = torch.Generator(device=dev).manual_seed(0)
                mod = torch.nn.LSTM(Dg, Hg).to(dev)
                xg = torch.randn(Tg, Ng, Dg, device=dev, generator=gg).requires_grad_()
                hg = torch.randn(Ng, Hg, device=dev, generator=gg).requires_grad_()
                cg = torch.randn(Ng, Hg, device=dev, generator=gg).requires_grad_()
                dg = torch.randn(Tg, Ng, Hg, device=dev, generator=gg)
                Wg, Ug, bg = (torch.from_numpy(v).to(dev).requires_grad_() for v in from_torch(mod))
                m_cudnn = timing.time_cuda(torch_module(mod, xg, hg, cg, dg), budget_s=budget, what="cuDNN")
                m_gloop = timing.time_cuda(torch_loop([Wg, Ug, bg], xg, hg, cg, dg), budget_s=budget, what="loop")
                spec = hardware.detect()
                peak = hardware.peak_flops(spec, "tf32" if args.tf32 else "fp32") if spec else 0.0
                for name, m in (("cuDNN nn.LSTM", m_cudnn), ("torch per-step loop + autograd", m_gloop)):
                    rate = fl / m.median
                    timing.check_plausible(rate, peak, what=name)
                    table.rows.append({"implementation": name, "device": f"cuda T={Tg} N={Ng} D={Dg} H={Hg}",
                                       "median ms": m.median * 1e3, "IQR ms": m.iqr * 1e3,
                                       "GFLOP/s": rate / 1e9, "runs": m.count,
                                       "loop / cuDNN": m.median / m_cudnn.median})
            table.notes.append(f"GPU: CUDA events with L2 flush; TF32 {'on' if args.tf32 else 'off'} "
                               "(torch.backends.cuda.matmul and cudnn).")
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = prev
    else:
        table.notes.append("No GPU: the rows cuDNN nn.LSTM vs the per-step torch loop appear on a CUDA device.")
    return table
