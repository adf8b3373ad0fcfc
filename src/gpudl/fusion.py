"""Fusion: do a chain of memory-bound operations in one pass over memory.

An elementwise operation does a few FLOPs per element and moves every element to and from
DRAM: far below the ridge point, its time is its bytes over the bandwidth. A chain of them
run one kernel at a time (PyTorch's eager mode) writes each intermediate to DRAM and reads it
back. The chain here, a transformer's bias + GELU + residual add,

    y = gelu(x + bias) + residual          x, residual (R, C); bias (C,)

is three kernels in eager mode, moving ``7 R C + C`` elements (x + bias: read 2, write 1;
GELU: read 1, write 1; + residual: read 2, write 1), and one fused kernel moving ``3 R C + C``
(read x, bias, residual; write y). The roofline predicts the fused kernel ``(7 R C + C) / (3 R C
+ C)``, about 2.3 times faster; TensorRT calls this vertical fusion, ``torch.compile`` does it
by generating the fused kernel. Folding a batch norm into the convolution before it is the
same idea taken further: the BN pass disappears because its arithmetic moves into the
convolution's weights.

Public names, in reading order:

``bias_gelu_residual``         (reference) the chain, op by op, in torch: three kernels
``bias_gelu_residual_kernel``, ``bias_gelu_residual_triton``   one fused Triton kernel
``GELU_FLOPS``, ``chain_ops``, ``fused_op``   FLOPs and bytes of each op and of the fused kernel
                               (``gpudl.roofline.Op``); every one is memory-bound, so the roofline's
                               prediction is the ratio of their bytes (Lab 09 writes the general one)
``cxx_compiler``, ``compile_status``, ``compiled_chain``   ``torch.compile`` of the chain, where
                               it can run (a GPU, or a CPU with a C++ compiler)
``FusionResult``, ``measure_fusion``   measured times next to the prediction
``ncu_vs_model``               Nsight Compute's DRAM bytes per kernel against the model
``fold_conv_bn_module``        BN folded into the convolution before it (``nn.Conv2d`` +
                               ``nn.BatchNorm2d`` in eval mode), by torch's ``fuse_conv_bn_eval``
                               (Lab 09 writes the folding of the weights and bias)
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Any

import triton                  # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
import triton.language as tl

from . import roofline
from ._launch import interpreting
from .hardware import bytes_per_element, normalize_dtype
from .references import reference

# --- the chain -------------------------------------------------------------------------------------


def _check_chain(x: Any, bias: Any, residual: Any) -> None:
    if x.ndim != 2:
        raise ValueError(f"x must be (rows, cols), got shape {tuple(x.shape)}")
    if tuple(bias.shape) != (x.shape[1],):
        raise ValueError(f"bias must be (cols,) = ({x.shape[1]},), got {tuple(bias.shape)}")
    if tuple(residual.shape) != tuple(x.shape):
        raise ValueError(f"residual must have x's shape {tuple(x.shape)}, got {tuple(residual.shape)}")
    if not (x.dtype == bias.dtype == residual.dtype):
        raise TypeError(f"x, bias and residual must share a dtype, got {x.dtype}, {bias.dtype}, {residual.dtype}")


@reference
def bias_gelu_residual(x: Any, bias: Any, residual: Any) -> Any:
    """``gelu(x + bias) + residual`` in eager torch: three kernels, two intermediates in DRAM."""
    import torch

    _check_chain(x, bias, residual)
    t = x + bias                                   # kernel 1: read x, bias; write t   (R, C)
    u = torch.nn.functional.gelu(t)                # kernel 2: read t; write u         (R, C)
    return u + residual                            # kernel 3: read u, residual; write y


@triton.jit
def bias_gelu_residual_kernel(x_ptr, bias_ptr, res_ptr, y_ptr, n_elements, cols, BLOCK: tl.constexpr):
    """y = gelu(x + bias) + residual over contiguous (rows, cols) tensors seen as one flat array;
    each program handles BLOCK consecutive elements, computing in FP32.

        for each block of BLOCK elements, in parallel:
            load x, residual (masked at the end) and bias[offset % cols]
            t = x + bias;  y = 0.5 t (1 + erf(t / sqrt 2)) + residual
            store y in y's dtype
    """
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = x + b
    y = 0.5 * t * (1.0 + tl.erf(t * 0.7071067811865476)) + r
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def bias_gelu_residual_triton(x: Any, bias: Any, residual: Any, *, block: int | None = None) -> Any:
    """The chain as one Triton kernel: each input read once, the output written once.

    Contiguous torch tensors (FP32, FP16 or BF16; BF16 not in the interpreter). ``block``
    defaults to 1024 on a GPU and 4096 in the interpreter (fewer, larger programs run faster
    there)."""
    import torch

    _check_chain(x, bias, residual)
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise TypeError(f"expected float32, float16 or bfloat16, got {x.dtype}")
    if x.dtype == torch.bfloat16 and interpreting():
        raise TypeError("Triton's interpreter has no bfloat16 (NumPy lacks it): use float16 or float32 on a CPU")
    x, bias, residual = x.contiguous(), bias.contiguous(), residual.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return y
    block = block or (4096 if interpreting() else 1024)
    bias_gelu_residual_kernel[(triton.cdiv(n, block),)](x, bias, residual, y, n, x.shape[1], BLOCK=block)
    return y


# --- counting -----------------------------------------------------------------------------------------

# FLOPs counted per element of GELU, 0.5 t (1 + erf(t / sqrt 2)): two multiplies, an add, a
# multiply inside, and erf as a short polynomial (about four FMAs). Any count below a few
# hundred leaves the op far under the ridge point, so the prediction does not depend on it.
GELU_FLOPS = 8


def chain_ops(rows: int, cols: int, dtype: Any = "fp16") -> list[roofline.Op]:
    """The chain's three kernels in eager mode, as roofline ops (FLOPs, bytes)."""
    n = rows * cols
    s = bytes_per_element(dtype)
    return [roofline.Op("x + bias", roofline.elementwise_flops(n), (2 * n + cols) * s),
            roofline.Op("gelu", roofline.elementwise_flops(n, GELU_FLOPS), roofline.elementwise_bytes(n, dtype)),
            roofline.Op("+ residual", roofline.elementwise_flops(n),
                        roofline.elementwise_bytes(n, dtype, inputs=2))]


def fused_op(rows: int, cols: int, dtype: Any = "fp16") -> roofline.Op:
    """The fused kernel: the same FLOPs, each input read once and the output written once."""
    n = rows * cols
    return roofline.Op("fused", sum(op.flops for op in chain_ops(rows, cols, dtype)),
                       (3 * n + cols) * bytes_per_element(dtype))


# --- torch.compile ---------------------------------------------------------------------------------


def cxx_compiler() -> str | None:
    """The C++ compiler ``torch.compile`` would use on a CPU ($CXX, g++, c++ or clang++), or None."""
    cxx = os.environ.get("CXX")
    if cxx and shutil.which(cxx):
        return shutil.which(cxx)
    for name in ("g++", "c++", "clang++"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def compile_status(device: str) -> tuple[bool, str]:
    """(whether torch.compile can fuse the chain on ``device``, why not / what it generates)."""
    if str(device).startswith("cuda"):
        return True, "inductor generates one Triton kernel"
    cxx = cxx_compiler()
    if cxx is None:
        return False, "torch.compile on a CPU needs a C++ compiler (g++ or clang++), and this machine has none"
    return True, f"inductor generates one C++ loop, compiled with {cxx}"


_COMPILED: dict[str, Any] = {}


def compiled_chain(device: str) -> Any:
    """``torch.compile(bias_gelu_residual)`` for ``device``, made once; raises RuntimeError with
    the reason where it cannot run."""
    ok, why = compile_status(device)
    if not ok:
        raise RuntimeError(why)
    key = "cuda" if str(device).startswith("cuda") else "cpu"
    if key not in _COMPILED:
        import torch

        def chain(x, bias, residual):
            return torch.nn.functional.gelu(x + bias) + residual

        _COMPILED[key] = torch.compile(chain)
    return _COMPILED[key]


# --- measured against predicted --------------------------------------------------------------------


@dataclass(frozen=True)
class FusionResult:
    """Median times (s) of the chain in eager torch, fused by the Triton kernel, and compiled
    (None where it did not run, ``note`` says why), with the roofline's prediction."""

    rows: int
    cols: int
    dtype: str
    device: str
    unfused_s: float
    fused_s: float
    compiled_s: float | None
    predicted: float
    note: str = ""

    @property
    def measured(self) -> float:
        return self.unfused_s / self.fused_s

    @property
    def compiled_speedup(self) -> float | None:
        return None if self.compiled_s is None else self.unfused_s / self.compiled_s

    def bandwidth(self, which: str = "fused") -> float:
        """Bytes per second the model's bytes imply for ``which`` ("fused" or "unfused")."""
        if which == "fused":
            return fused_op(self.rows, self.cols, self.dtype).bytes / self.fused_s
        return sum(op.bytes for op in chain_ops(self.rows, self.cols, self.dtype)) / self.unfused_s


def measure_fusion(rows: int, cols: int, dtype: Any = "fp16", device: str | None = None, *,
                   compile: bool = True, budget_s: float = 1.0) -> FusionResult:
    """Time the chain eager, fused (Triton) and compiled on ``device`` with ``gpudl.timing.measure``
    (CUDA events, L2 flushed, on a GPU), after checking all three agree. The prediction is the
    roofline's: every op is memory-bound, so it is the ratio of bytes. In Triton's interpreter
    the fused kernel's time is Python's, not a kernel's: ``note`` says so."""
    import torch

    from . import hardware, timing
    from .grading import assert_close

    dev = device or hardware.device()
    dt = normalize_dtype(dtype)
    tdt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dt]
    g = torch.Generator(device="cpu").manual_seed(0)
    x, residual = (torch.randn(rows, cols, generator=g).to(dev, tdt) for _ in range(2))
    bias = torch.randn(cols, generator=g).to(dev, tdt)
    eager = bias_gelu_residual(x, bias, residual)
    assert_close(bias_gelu_residual_triton(x, bias, residual), eager, dtype=dt, k=4, name="fused kernel")
    kw = {"budget_s": budget_s}
    unfused_m = timing.measure(lambda: bias_gelu_residual(x, bias, residual), dev, what="eager", **kw)
    fused_m = timing.measure(lambda: bias_gelu_residual_triton(x, bias, residual), dev, what="fused", **kw)
    notes = ["the fused time is Triton's interpreter, not a kernel"] if interpreting() else []
    compiled_s = None
    if compile:
        ok, why = compile_status(dev)
        if ok:
            fn = compiled_chain(dev)
            assert_close(fn(x, bias, residual), eager, dtype=dt, k=4, name="compiled chain")
            compiled_s = timing.measure(lambda: fn(x, bias, residual), dev, what="compiled", **kw).median
        else:
            notes.append(f"torch.compile skipped: {why}")
    ops, fused = chain_ops(rows, cols, dt), fused_op(rows, cols, dt)
    # Every op is far below any GPU's ridge point (under 2 FLOP/byte): each takes its bytes over the
    # bandwidth, and the roofline predicts the ratio of bytes whatever the device.
    predicted = sum(op.bytes for op in ops) / fused.bytes
    return FusionResult(rows, cols, dt, dev, unfused_m.median, fused_m.median, compiled_s, predicted, "; ".join(notes))


_NCU_TARGET = """
import torch, gpudl
from gpudl import fusion
g = torch.Generator().manual_seed(0)
x, r = (torch.randn({rows}, {cols}, generator=g).to('cuda', torch.{tdt}) for _ in range(2))
b = torch.randn({cols}, generator=g).to('cuda', torch.{tdt})
fn = {fn}
fn(x, b, r); torch.cuda.synchronize()        # warm-up: compile before profiling
torch.cuda.profiler.start()
fn(x, b, r); torch.cuda.synchronize()
torch.cuda.profiler.stop()
"""


def ncu_vs_model(rows: int = 8192, cols: int = 8192, dtype: Any = "fp16") -> list[dict[str, Any]]:
    """Nsight Compute's ``dram__bytes_read.sum`` and ``dram__bytes_write.sum`` for each kernel of
    the eager chain and of the fused kernel, next to the model's bytes for the same op. Needs a
    GPU and ncu with access to the counters (``gpudl.profiling.NcuError`` says what is missing).
    Pick tensors much larger than the L2 cache, so the model's 'every byte to DRAM' holds."""
    from . import profiling

    dt = normalize_dtype(dtype)
    tdt = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}[dt]
    model = {"eager": chain_ops(rows, cols, dt), "fused": [fused_op(rows, cols, dt)]}
    fns = {"eager": "fusion.bias_gelu_residual", "fused": "fusion.bias_gelu_residual_triton"}
    out = []
    for which, fn in fns.items():
        rows_ = profiling.ncu_metrics(_NCU_TARGET.format(rows=rows, cols=cols, tdt=tdt, fn=fn))
        kernels: dict[str, dict[str, float]] = {}
        for r in rows_:
            kernels.setdefault(f"{r['id']}|{r['kernel']}", {})[r["metric"]] = r["value"]
        for (key, metrics), op in zip(sorted(kernels.items(), key=lambda kv: int(kv[0].split("|")[0] or 0)),
                                      model[which]):
            read, write = metrics.get("dram__bytes_read.sum", 0.0), metrics.get("dram__bytes_write.sum", 0.0)
            out.append({"chain": which, "op": op.name, "kernel": key.split("|", 1)[1][:60],
                        "ncu_read": read, "ncu_write": write, "ncu_bytes": read + write, "model_bytes": op.bytes,
                        "ncu/model": (read + write) / op.bytes})
    return out


# --- conv + batch norm folding ---------------------------------------------------------------------


def fold_conv_bn_module(conv: Any, bn: Any) -> Any:
    """A new ``nn.Conv2d`` equal to ``bn(conv(x))`` for a BN in eval mode (running statistics):
    PyTorch's ``torch.nn.utils.fusion.fuse_conv_bn_eval``, which scales each output channel k of
    the weight by ``gamma_k / sqrt(var_k + eps)`` and moves the BN's shift into the bias."""
    import torch

    if conv.training or bn.training:
        raise ValueError("fold a batch norm in eval mode: training mode normalises by the batch's statistics")
    return torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
