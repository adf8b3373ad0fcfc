"""Tensor-core arithmetic and mixed-precision training, on a CPU.

A tensor core computes ``D = A B + C`` on small tiles: the inputs are rounded to a narrow
format (FP16, BF16, TF32, FP8), every product is exact (two 11-bit significands make at most
22 bits, which FP32 holds), and the products are summed in an FP32 accumulator (or FP16, on
request). Emulating that product, one rounding of the running sum at a time, is lab 08's
exercise; this module has what the lecture builds around it: TF32 rounding of torch tensors
(for the comparison with cuBLAS), FP8 with per-tensor scales, the lecture's split
``(A1 + A2)(B1 + B2)`` that recovers most of FP32's accuracy from three 16-bit products, and the
arithmetic of MMA shapes and peaks.

Mixed-precision training keeps FP32 master weights, runs matrix products in 16 bits, and
scales the loss so that small gradients survive FP16's range; the scale adapts as
``torch.amp.GradScaler`` adapts it (its constants are here; writing its step is the lab's).

Public names, in reading order:

``round_tf32_torch``     TF32 rounding of a torch tensor on any device (``gpudl.formats``'s, for the GPU comparison)
``to_fp8``, ``fp8_matmul``   FP8 E4M3 with a per-tensor scale, through ``torch._scaled_mm``
``split``, ``split_matmul``, ``relative_error``   the 3-product trick and how well it does
``MMAShape``, ``TensorCoreGeneration``, ``TENSOR_CORES``, ``tensor_core_fma_per_sm``, ``tensor_core_peak``
``LECTURE_MAC_TABLE``, ``mac_table``, ``throughput_ladder``   FMA per clock per SM, peaks by mode
``AMP_PRECISION``        which operations run in 16 bits and which keep FP32, and why
``INIT_SCALE``, ``GROWTH_FACTOR``, ``BACKOFF_FACTOR``, ``GROWTH_INTERVAL``, ``ScalerState``   the dynamic
                         loss scaler's constants (``torch.amp.GradScaler``'s) and state
``TrainingHistory``, ``train_mixed_precision``   a small model in FP32, FP16 without and with scaling
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from . import hardware
from .formats import FloatFormat, round_to
from .formats import round_tf32_torch  # noqa: F401 - one of this module's names: the GPU comparison's TF32 rounding


# --- FP8 with per-tensor scales --------------------------------------------------------------

def to_fp8(t: Any) -> tuple[Any, Any]:
    """``(t8, scale)`` with ``t8 = t / scale`` in ``float8_e4m3fn`` and ``scale = amax(|t|) / 448``:
    the largest magnitude lands on E4M3's largest value, so nothing overflows and the 3-bit
    mantissa covers the tensor's own range. ``scale`` is an FP32 scalar tensor."""
    import torch

    amax = t.detach().abs().max().float().clamp(min=torch.finfo(torch.float32).tiny)
    scale = amax / torch.finfo(torch.float8_e4m3fn).max
    return (t.float() / scale).to(torch.float8_e4m3fn), scale


def fp8_matmul(a: Any, b: Any, out_dtype: Any = None) -> Any:
    """``a @ b`` on FP8 tensor cores: both operands to E4M3 with per-tensor scales (``to_fp8``),
    multiplied by ``torch._scaled_mm``, which takes A row-major and B column-major and undoes the
    scales in its FP32 epilogue. BF16 result by default."""
    import torch

    out_dtype = torch.bfloat16 if out_dtype is None else out_dtype
    a8, sa = to_fp8(a)
    b8t, sb = to_fp8(b.t().contiguous())                   # (N, K) row-major = B (K, N) column-major
    return torch._scaled_mm(a8, b8t.t(), scale_a=sa, scale_b=sb, out_dtype=out_dtype)


# --- the 3-product split ----------------------------------------------------------------

def split(a: Any, fmt: str | FloatFormat = "bf16") -> tuple[np.ndarray, np.ndarray]:
    """``a = hi + lo`` (nearly): ``hi`` is ``a`` rounded to ``fmt``, ``lo`` the remainder rounded to
    ``fmt`` (``gpudl.formats.round_to``: torch's casts). Two BF16 pieces carry 16 significant bits,
    two TF32 or FP16 pieces 22. ``a`` is float32 data (its remainder is float32 too)."""
    a = np.asarray(a, dtype=np.float64)
    hi = round_to(a, fmt)
    return hi, round_to(a - hi, fmt)


def split_matmul(a: Any, b: Any, *, inputs: str | FloatFormat = "bf16", terms: int = 3) -> np.ndarray:
    """A @ B from 16-bit pieces, as the lecture writes it:
    ``(A1 + A2)(B1 + B2) = A1 B1 + A1 B2 + A2 B1 + A2 B2``. ``terms=3`` drops ``A2 B2`` (its size
    is below FP32's last place), ``terms=1`` is the plain product ``A1 B1``. Each product is what a
    tensor core's FP32 result would be up to its accumulation order: the pieces' exact products
    summed in FP64 and rounded once to FP32; the partial results add in FP32."""
    if terms not in (1, 3, 4):
        raise ValueError(f"terms must be 1, 3 or 4, got {terms}")
    a1, a2 = split(a, inputs)
    b1, b2 = split(b, inputs)
    pairs = [(a1, b1), (a1, b2), (a2, b1), (a2, b2)][:terms]
    # small products first: their rounding errors stay small next to A1 B1
    out = np.zeros((a1.shape[0], b1.shape[1]), np.float32)
    for x, y in reversed(pairs):
        out = out + (x @ y).astype(np.float32)
    return out


def relative_error(approx: Any, exact: Any) -> float:
    """Normwise relative error ``||approx - exact||_F / ||exact||_F`` (in FP64)."""
    e = np.asarray(exact, dtype=np.float64)
    return float(np.linalg.norm(np.asarray(approx, dtype=np.float64) - e) / np.linalg.norm(e))


# --- MMA shapes and FMA per clock --------------------------------------------------------

@dataclass(frozen=True)
class MMAShape:
    """One tensor-core operation per clock: an (m x k) times (k x n) product, m*n*k FMA."""

    m: int
    n: int
    k: int

    def __post_init__(self) -> None:
        if min(self.m, self.n, self.k) < 1:
            raise ValueError(f"MMA dimensions must be positive, got {self.m}x{self.n}x{self.k}")

    @property
    def fma(self) -> int:
        return self.m * self.n * self.k


@dataclass(frozen=True)
class TensorCoreGeneration:
    """Tensor cores of one GPU as the lecture counts them: per SM, and the FP16 MMA each does per clock."""

    architecture: str
    gpu: str                       # its entry in gpudl.hardware.SPECS
    tensor_cores_per_sm: int
    shape: MMAShape
    source: str = ""


TENSOR_CORES: Mapping[str, TensorCoreGeneration] = MappingProxyType({
    "Volta": TensorCoreGeneration("Volta", "V100", 8, MMAShape(4, 4, 4),
                                  "the lecture: 8 tensor cores per SM, each a 4x4x4 MMA (64 FMA) per clock"),
    "Ampere": TensorCoreGeneration("Ampere", "A100", 4, MMAShape(8, 8, 4),
                                   "the lecture: 4 tensor cores per SM, each an 8x4 times 4x8 MMA (256 FMA) per clock"),
})


def tensor_core_fma_per_sm(gen: TensorCoreGeneration | str) -> int:
    """FP16 FMA per clock per SM: tensor cores per SM x the FMA of one MMA (Volta 8 x 64 = 512)."""
    gen = TENSOR_CORES[gen] if isinstance(gen, str) else gen
    return gen.tensor_cores_per_sm * gen.shape.fma


def tensor_core_peak(gen: TensorCoreGeneration | str) -> float:
    """Dense FP16 tensor-core FLOP/s: SMs x FMA per clock per SM x 2 x clock, with the GPU's SMs and
    clock from ``gpudl.hardware`` (V100: 80 x 512 x 2 x 1.53 GHz = 125 TFLOP/s)."""
    gen = TENSOR_CORES[gen] if isinstance(gen, str) else gen
    spec = hardware.get_spec(gen.gpu)
    return spec.sms * tensor_core_fma_per_sm(gen) * 2 * spec.clock_hz(tensor=True)


# The lecture's "multiply-add operations per clock per SM" table (None: empty cell).
_MAC_COLUMNS = ("cuda fp64", "cuda fp32", "cuda fp16", "cuda int8", "tensor fp64", "tensor tf32", "tensor fp16",
                "tensor int8", "tensor int4")
LECTURE_MAC_TABLE = MappingProxyType({
    "Volta": dict(zip(_MAC_COLUMNS, (32, 64, 128, 256, None, None, 512, None, None))),
    "Turing": dict(zip(_MAC_COLUMNS, (2, 64, 128, 256, None, None, 512, 1024, 2048))),
    "Ampere (A100)": dict(zip(_MAC_COLUMNS, (32, 64, 256, 256, 64, 512, 1024, 2048, 4096))),
})
_MAC_GPUS = {"Volta": "V100", "Turing": "T4", "Ampere (A100)": "A100"}


def mac_table() -> dict[str, dict[str, int | None]]:
    """The lecture's table rebuilt from ``gpudl.hardware`` (None where the package has no rate)."""
    out = {}
    for arch, gpu in _MAC_GPUS.items():
        spec = hardware.SPECS[gpu]
        row = {}
        for col in _MAC_COLUMNS:
            unit, dt = col.split()
            table = spec.cuda_fma_per_sm if unit == "cuda" else spec.tensor_fma_per_sm
            row[col] = table.get(dt)
        out[arch] = row
    return out


def throughput_ladder(spec: Any) -> list[dict[str, Any]]:
    """Peak FLOP/s of a GPU by math mode (FP32 on CUDA cores, then tensor-core TF32, FP16, BF16,
    FP8, and their 2:4-sparse rates), each with its ratio to FP32. A100: TF32 8x, FP16 16x."""
    spec = hardware.get_spec(spec)
    fp32 = hardware.peak_flops(spec, "fp32", tensor_cores=False)
    rows = [{"mode": "fp32", "sparse": False, "peak_flops": fp32, "x_fp32": 1.0}]
    for dt in ("tf32", "fp16", "bf16", "fp8"):
        if dt not in spec.tensor_fma_per_sm:
            continue
        for sparse in ((False, True) if spec.sparsity else (False,)):
            peak = hardware.peak_flops(spec, dt, sparse=sparse)
            rows.append({"mode": dt, "sparse": sparse, "peak_flops": peak, "x_fp32": peak / fp32})
    return rows


# --- which operations may run in 16 bits -------------------------------------------------------

AMP_PRECISION = MappingProxyType({
    "matmul": ("16-bit", "matrix multiplications (linear, matmul, bmm, conv) run on tensor cores, products "
                         "exact and sums in FP32"),
    "pointwise": ("16-bit", "most pointwise operations (relu, tanh, add, sub, mul) lose nothing worth keeping"),
    "reduction": ("fp32", "sums, softmax and normalisations add small values to large sums: rounding errors "
                          "pile up in 16 bits (they need precision)"),
    "loss": ("fp32", "loss functions (cross entropy, l2 loss, weight decay) need precision and range"),
    "exp_log_pow": ("fp32", "pointwise operations with f(x) >> |x| (exp, log, pow) need range"),
    "weights": ("fp32", "master weights and their updates: small updates must accumulate across iterations"),
})


# --- the dynamic loss scaler ---------------------------------------------------------------------

INIT_SCALE = 2.0 ** 16        # torch.amp.GradScaler(init_scale=65536.0)
GROWTH_FACTOR = 2.0           # growth_factor
BACKOFF_FACTOR = 0.5          # backoff_factor
GROWTH_INTERVAL = 2000        # growth_interval


@dataclass(frozen=True)
class ScalerState:
    """The loss scale and the number of clean steps since it last changed (GradScaler's ``_scale``
    and ``_growth_tracker``): the state one step of the scaler reads and returns."""

    scale: float = INIT_SCALE
    growth_tracker: int = 0

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"the loss scale must be positive, got {self.scale}")
        if self.growth_tracker < 0:
            raise ValueError(f"growth_tracker counts steps, got {self.growth_tracker}")


# --- a small model trained in FP32 and in emulated FP16 ---------------------------------------------

@dataclass
class TrainingHistory:
    """Per step: the loss, the fraction of gradient entries that are exactly zero, the loss scale
    used, and whether the step was skipped; the final loss on the whole data set."""

    mode: str
    loss: list[float] = field(default_factory=list)
    zero_grad_fraction: list[float] = field(default_factory=list)
    scale: list[float] = field(default_factory=list)
    skipped: list[bool] = field(default_factory=list)
    final_loss: float = float("nan")


_MODES = ("fp32", "fp16", "fp16-scaled")


def _fp16_storage():
    import torch

    class ToFP16(torch.autograd.Function):
        """Round to FP16 in the forward pass and the gradient to FP16 in the backward pass: a tensor
        the GPU would store in FP16 (underflow to 0, overflow to inf, 11-bit significands)."""

        @staticmethod
        def forward(ctx, x):
            return x.to(torch.float16).to(torch.float32)

        @staticmethod
        def backward(ctx, g):
            return g.to(torch.float16).to(torch.float32)

    return ToFP16.apply


def train_mixed_precision(mode: str = "fp32", *, steps: int = 300, loss_weight: float = 2.0 ** -24, lr: float = 0.1,
                          init_scale: float = INIT_SCALE, growth_interval: int = GROWTH_INTERVAL,
                          seed: int = 0, n: int = 512, hidden: int = 64) -> TrainingHistory:
    """Fit ``y = sin(x . w)`` with a two-layer tanh network, by full-batch gradient descent.

    ``mode``: "fp32"; "fp16" (weights' copies, activations and gradients stored in FP16, products
    summed in FP32, master weights FP32, no loss scaling); "fp16-scaled" (the same with the dynamic
    loss scaler, ``torch.amp.GradScaler``). The loss is multiplied by ``loss_weight`` (and the step
    divided by it), which changes nothing in FP32 but puts the gradients where many real networks'
    are: mostly below FP16's smallest normal (6.1e-5), many below its smallest subnormal (6.0e-8).
    FP16 is emulated: every tensor a GPU would store in 16 bits is rounded to FP16.
    """
    import torch

    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    g = torch.Generator().manual_seed(seed)
    d = 16
    x = torch.randn(n, d, generator=g)                                   # (n, d)
    y = torch.sin(x @ torch.randn(d, 1, generator=g) / math.sqrt(d) * 2)  # (n, 1)
    params = [torch.randn(hidden, d, generator=g) / math.sqrt(d), torch.zeros(hidden),
              torch.randn(1, hidden, generator=g) / math.sqrt(hidden), torch.zeros(1)]
    params = [p.requires_grad_() for p in params]                       # FP32 master weights
    q = _fp16_storage() if mode != "fp32" else (lambda t: t)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval) \
        if mode == "fp16-scaled" else None
    history = TrainingHistory(mode)

    def loss_of(ps):
        w1, b1, w2, b2 = (q(p) for p in ps)                             # 16-bit copies of the weights
        h = q(torch.tanh(q(q(x) @ w1.T + b1)))                           # (n, hidden)
        out = q(h @ w2.T + b2)                                           # (n, 1)
        return torch.mean((out - y) ** 2)                                # the loss in FP32

    threads = torch.get_num_threads()
    torch.set_num_threads(1)            # a model this small runs fastest (and steadiest) on one thread
    try:
        _train(steps, params, loss_of, loss_weight, lr, scaler, history)
        with torch.no_grad():
            history.final_loss = float(loss_of(params))
    finally:
        torch.set_num_threads(threads)
    return history


def _train(steps, params, loss_of, loss_weight, lr, scaler, history) -> None:
    import torch

    opt = torch.optim.SGD(params, lr=lr / loss_weight)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_of(params)
        scale = scaler.get_scale() if scaler is not None else 1.0
        weighted = loss * loss_weight
        (scaler.scale(weighted) if scaler is not None else weighted).backward()
        grads = torch.cat([p.grad.detach().reshape(-1) for p in params])   # of the scaled loss
        history.loss.append(float(loss.detach()))
        history.scale.append(scale)
        history.zero_grad_fraction.append(float((grads == 0).float().mean()))
        history.skipped.append(scaler is not None and not bool(torch.isfinite(grads).all()))   # GradScaler skips it
        if scaler is not None:
            scaler.step(opt)                    # unscales (x 1/scale in FP32), steps unless inf/NaN
            scaler.update()                     # backs off, or grows after growth_interval clean steps
        else:
            opt.step()
