"""torch.nn.LSTM (cuDNN on a GPU) vs a per-step loop of torch.nn.LSTMCell, forward + backward.

One LSTM layer, fp32, the same weights in both: ``torch.nn.LSTM`` runs the whole sequence in one
call (its fused CPU kernel; on a GPU cuDNN's RNN: the input projection of the whole sequence as
one GEMM, fused elementwise work, persistent kernels), the loop calls ``torch.nn.LSTMCell`` once
per step (two products and the elementwise work per step, launched step by step). Autograd does
both backwards. (The FLOPs of these products are lab 06's exercise; the table shows times.)
"""
from __future__ import annotations

import argparse

from .. import timing
from ..table import Table


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-T", type=int, default=None)
    p.add_argument("-N", type=int, default=None)
    p.add_argument("-D", type=int, default=None)
    p.add_argument("-H", type=int, default=None)
    p.add_argument("--tf32", action="store_true", help="allow TF32 on the GPU (default: off, true FP32)")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing per row")


def _pair(D: int, H: int, device: str):
    """An ``nn.LSTM`` and an ``nn.LSTMCell`` holding the same (random) weights."""
    import torch

    module = torch.nn.LSTM(D, H).to(device)
    cell = torch.nn.LSTMCell(D, H).to(device)
    cell.load_state_dict({k.removesuffix("_l0"): v for k, v in module.state_dict().items()})
    return module, cell


def _runs(module, cell, x, h0, c0, dout):
    """Two closures, forward + backward: the whole sequence in one call, and the per-step loop."""
    import torch

    def whole():
        out, _ = module(x, (h0[None], c0[None]))
        out.backward(dout)

    def loop():
        h, c, outs = h0, c0, []
        for t in range(x.shape[0]):
            h, c = cell(x[t], (h, c))
            outs.append(h)
        torch.stack(outs).backward(dout)

    return whole, loop


def _inputs(T: int, N: int, D: int, H: int, device: str, seed: int = 0):
    import torch

    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(T, N, D, device=device, generator=g).requires_grad_()
    h0 = (0.1 * torch.randn(N, H, device=device, generator=g)).requires_grad_()
    c0 = (0.1 * torch.randn(N, H, device=device, generator=g)).requires_grad_()
    dout = torch.randn(T, N, H, device=device, generator=g)
    return x, h0, c0, dout


def run(args: argparse.Namespace) -> Table:
    import torch

    T = args.T or (16 if args.quick else 64)
    N = args.N or (16 if args.quick else 32)
    D = args.D or (128 if args.quick else 256)
    H = args.H or (128 if args.quick else 256)
    budget = args.budget or (0.5 if args.quick else 2.0)
    table = Table(f"LSTM forward + backward, T={T} N={N} D={D} H={H}, fp32")

    def row(what: str, device: str, m, base: float) -> dict:
        return {"implementation": what, "device": device, "median ms": m.median * 1e3, "IQR ms": m.iqr * 1e3,
                "runs": m.count, "time / nn.LSTM": m.median / base}

    torch.manual_seed(0)
    module, cell = _pair(D, H, "cpu")
    whole, loop = _runs(module, cell, *_inputs(T, N, D, H, "cpu"))
    m_whole = timing.time_cpu(whole, budget_s=budget, what="torch nn.LSTM")
    m_loop = timing.time_cpu(loop, budget_s=budget, what="nn.LSTMCell loop")
    table.rows += [row("torch nn.LSTM", "cpu", m_whole, m_whole.median),
                   row("per-step loop of nn.LSTMCell", "cpu", m_loop, m_whole.median)]
    table.notes.append(f"CPU: {torch.get_num_threads()} torch threads.")
    table.notes.append("On cores shared with other busy processes, multithreaded BLAS calls can stall for a "
                       "scheduler time slice; for a clean comparison run with OMP_NUM_THREADS=1.")

    if torch.cuda.is_available():
        dev = "cuda"
        prev = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
        try:
            sizes = [(T, N, D, H)] + ([] if args.quick else [(T, 256, 1024, 1024)])
            for (Tg, Ng, Dg, Hg) in sizes:
                module, cell = _pair(Dg, Hg, dev)
                whole, loop = _runs(module, cell, *_inputs(Tg, Ng, Dg, Hg, dev))
                m_cudnn = timing.time_cuda(whole, budget_s=budget, what="cuDNN")
                m_gloop = timing.time_cuda(loop, budget_s=budget, what="loop")
                for name, m in (("cuDNN nn.LSTM", m_cudnn), ("per-step loop of nn.LSTMCell", m_gloop)):
                    table.rows.append(row(name, f"cuda T={Tg} N={Ng} D={Dg} H={Hg}", m, m_cudnn.median))
            table.notes.append(f"GPU: CUDA events with L2 flush; TF32 {'on' if args.tf32 else 'off'} "
                               "(torch.backends.cuda.matmul and cudnn).")
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = prev
    else:
        table.notes.append("No GPU: the rows cuDNN nn.LSTM vs the per-step nn.LSTMCell loop appear on a CUDA device.")
    return table
