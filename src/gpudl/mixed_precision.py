"""Tensor-core arithmetic and mixed-precision training, emulated on a CPU.

A tensor core computes ``D = A B + C`` on small tiles: the inputs are rounded to a narrow
format (FP16, BF16, TF32, FP8), every product is exact (two 11-bit significands make at most
22 bits, which FP32 holds), and the products are summed in an FP32 accumulator (or FP16, on
request). ``tensor_core_matmul`` does exactly that with NumPy, so the effect of each choice
can be measured: FP16 inputs lose little, an FP16 *accumulator* loses long dot products,
TF32 is FP32 data with FP16's mantissa. The lecture's split ``(A1 + A2)(B1 + B2)`` recovers
most of FP32's accuracy from three 16-bit products.

Mixed-precision training keeps FP32 master weights, runs matrix products in 16 bits, and
scales the loss so that small gradients survive FP16's range; the scale adapts the way
``torch.amp.GradScaler`` adapts it (``update_scale`` is the rule of ``torch._amp_update_scale_``).

Public names, in reading order:

``tensor_core_matmul``   D = A B + C with inputs rounded to a format, exact products, FP32/FP16 accumulation
``tf32_matmul``          FP32 data through TF32 tensor cores (inputs rounded, FP32 accumulation)
``round_tf32_torch``     TF32 rounding of a torch tensor on any device (for the GPU comparison)
``to_fp8``, ``fp8_matmul``   FP8 E4M3 with a per-tensor scale, through ``torch._scaled_mm``
``split``, ``split_matmul``, ``relative_error``   the 3-product trick and how well it does
``MMAShape``, ``TensorCoreGeneration``, ``TENSOR_CORES``, ``tensor_core_fma_per_sm``, ``tensor_core_peak``
``LECTURE_MAC_TABLE``, ``mac_table``, ``throughput_ladder``   FMA per clock per SM, peaks by mode
``AMP_PRECISION``        which operations run in 16 bits and which keep FP32, and why
``INIT_SCALE``, ``GROWTH_FACTOR``, ``BACKOFF_FACTOR``, ``GROWTH_INTERVAL``, ``ScalerState``,
``update_scale``, ``unscale``, ``scaler_step``   the dynamic loss scaler
``TrainingHistory``, ``train_mixed_precision``   a small model in FP32, FP16 without and with scaling
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np

from . import hardware
from .formats import FP16, FP32, TF32, FloatFormat, get_format, round_to
from .references import reference

_ACCUMULATORS = ("fp32", "fp16", "exact")


def _round_fast(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """RNE to FP32 or FP16 through NumPy's own (correctly rounded) casts; others via ``round_to``."""
    if fmt is FP32:
        return x.astype(np.float32)
    if fmt is FP16:
        with np.errstate(over="ignore"):
            return x.astype(np.float16)
    return round_to(x, fmt)


@reference
def tensor_core_matmul(a: Any, b: Any, c: Any = None, *, inputs: str | FloatFormat = "fp16",
                       accumulate: str = "fp32", block_k: int = 1, rounding: str = "rne") -> np.ndarray:
    """``D = A B + C`` as a tensor core computes it, on NumPy arrays A (M, K), B (K, N), C (M, N).

    1. A and B are rounded to ``inputs`` ("fp16", "bf16", "tf32", "fp8_e4m3", "fp32", ...) with
       ``rounding`` ("rne"; "rna" or "rtz" to compare);
    2. every product is exact (formed in FP64: at most 2 x 24 significant bits);
    3. the products are added to C in ``block_k`` steps along K: each step adds the exact sum of
       ``block_k`` products to the accumulator and rounds once, to FP32 ("fp32") or to FP16
       ("fp16"). ``accumulate="exact"`` sums everything in FP64 and rounds once to FP32 (the best
       any accumulation order can do).

    Returns the accumulator: float32 (FP32 or exact) or float16 values, shape (M, N).
    """
    if accumulate not in _ACCUMULATORS:
        raise ValueError(f"accumulate must be one of {_ACCUMULATORS}, got {accumulate!r}")
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"need A (M, K) and B (K, N), got {a.shape} and {b.shape}")
    if block_k < 1:
        raise ValueError(f"block_k must be >= 1, got {block_k}")
    fmt = get_format(inputs)
    ar = round_to(a.astype(np.float64, copy=False), fmt, rounding)          # (M, K), exact in FP64
    br = round_to(b.astype(np.float64, copy=False), fmt, rounding)          # (K, N)
    m, n = a.shape[0], b.shape[1]
    c = np.zeros((m, n)) if c is None else np.broadcast_to(np.asarray(c, dtype=np.float64), (m, n))
    if accumulate == "exact":
        with np.errstate(over="ignore"):
            return (c + ar @ br).astype(np.float32)
    acc_fmt = FP32 if accumulate == "fp32" else FP16
    acc = _round_fast(c, acc_fmt)
    for k0 in range(0, a.shape[1], block_k):
        part = ar[:, k0:k0 + block_k] @ br[k0:k0 + block_k, :]              # (M, N), exact for block_k = 1
        with np.errstate(invalid="ignore"):
            acc = _round_fast(acc.astype(np.float64) + part, acc_fmt)
    return acc


@reference
def tf32_matmul(a: Any, b: Any, *, rounding: str = "rne", accumulate: str = "exact") -> np.ndarray:
    """FP32 A @ B in TF32 mode: inputs rounded to TF32, exact products, FP32 result. The GPU's
    accumulation order is its own; "exact" rounds once, "fp32" adds one product at a time."""
    return tensor_core_matmul(np.asarray(a, np.float32), np.asarray(b, np.float32), inputs=TF32,
                              accumulate=accumulate, rounding=rounding)


def round_tf32_torch(t: Any, rounding: str = "rne") -> Any:
    """A float32 torch tensor rounded to TF32 on its own device, with integer operations on its
    bits (RNE: add 0xFFF plus the lowest kept bit, clear the 13 low bits; "rna": add 0x1000;
    "rtz": clear). Infinities and NaN pass through."""
    import torch

    if t.dtype != torch.float32:
        raise TypeError(f"round_tf32_torch takes float32 tensors, got {t.dtype}")
    bits = t.contiguous().view(torch.int32)
    if rounding == "rne":
        bits = bits + (0xFFF + ((bits >> 13) & 1))
    elif rounding == "rna":
        bits = bits + 0x1000
    elif rounding != "rtz":
        raise ValueError(f"rounding must be 'rne', 'rna' or 'rtz', got {rounding!r}")
    out = (bits & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(t), out, t)


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

@reference
def split(a: Any, fmt: str | FloatFormat = "bf16") -> tuple[np.ndarray, np.ndarray]:
    """``a = hi + lo`` (nearly): ``hi`` is ``a`` rounded to ``fmt``, ``lo`` the remainder rounded to
    ``fmt``. Two BF16 pieces carry 16 significant bits, two TF32 or FP16 pieces 22."""
    a = np.asarray(a, dtype=np.float64)
    hi = round_to(a, fmt)
    return hi, round_to(a - hi, fmt)


@reference
def split_matmul(a: Any, b: Any, *, inputs: str | FloatFormat = "bf16", terms: int = 3,
                 accumulate: str = "fp32") -> np.ndarray:
    """A @ B from 16-bit pieces, as the lecture writes it:
    ``(A1 + A2)(B1 + B2) = A1 B1 + A1 B2 + A2 B1 + A2 B2``. ``terms=3`` drops ``A2 B2`` (its size
    is below FP32's last place), ``terms=1`` is the plain product ``A1 B1``. Each product runs
    through ``tensor_core_matmul`` (FP32 accumulation); the partial results add in FP32."""
    if terms not in (1, 3, 4):
        raise ValueError(f"terms must be 1, 3 or 4, got {terms}")
    a1, a2 = split(a, inputs)
    b1, b2 = split(b, inputs)
    pairs = [(a1, b1), (a1, b2), (a2, b1), (a2, b2)][:terms]
    # small products first: their rounding errors stay small next to A1 B1
    out = np.zeros((a1.shape[0], b1.shape[1]), np.float32)
    for x, y in reversed(pairs):
        out = out + tensor_core_matmul(x, y, inputs=inputs, accumulate=accumulate)
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
    return hardware.peak_from_units(spec.sms, tensor_core_fma_per_sm(gen), spec.clock_hz(tensor=True))


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
    """The loss scale and the number of clean steps since it last changed."""

    scale: float = INIT_SCALE
    growth_tracker: int = 0

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"the loss scale must be positive, got {self.scale}")
        if self.growth_tracker < 0:
            raise ValueError(f"growth_tracker counts steps, got {self.growth_tracker}")


@reference
def update_scale(state: ScalerState, found_inf: bool, *, growth_factor: float = GROWTH_FACTOR,
                 backoff_factor: float = BACKOFF_FACTOR, growth_interval: int = GROWTH_INTERVAL) -> ScalerState:
    """One update of the scale, as ``torch._amp_update_scale_`` does it: on inf/NaN gradients the
    scale is multiplied by ``backoff_factor`` and the count restarts; otherwise the count grows,
    and at ``growth_interval`` clean steps in a row the scale is multiplied by ``growth_factor``
    (kept only if finite in FP32) and the count restarts. The scale is an FP32 number."""
    if found_inf:
        return ScalerState(float(np.float32(state.scale * backoff_factor)), 0)
    clean = state.growth_tracker + 1
    if clean == growth_interval:
        with np.errstate(over="ignore"):
            grown = np.float32(state.scale) * np.float32(growth_factor)
        return ScalerState(float(grown) if np.isfinite(grown) else state.scale, 0)
    return ScalerState(state.scale, clean)


@reference
def unscale(grads: Sequence[Any], scale: float) -> tuple[list[np.ndarray], bool]:
    """FP32 gradients ``g x (1/scale)`` (GradScaler multiplies by an FP32 reciprocal) and whether
    any is inf or NaN."""
    inv = np.float32(1.0 / np.float64(np.float32(scale)))
    out = [np.asarray(g, dtype=np.float32) * inv for g in grads]
    return out, any(not np.all(np.isfinite(g)) for g in out)


@reference
def scaler_step(state: ScalerState, grads: Sequence[Any], **kwargs: Any) -> tuple[ScalerState, list[np.ndarray] | None]:
    """One step of dynamic loss scaling, given the gradients of the *scaled* loss: unscale them,
    and return the next state with the gradients to apply, or ``None`` when any was inf or NaN
    (the optimizer step is skipped). ``kwargs`` go to ``update_scale``."""
    unscaled, found_inf = unscale(grads, state.scale)
    return update_scale(state, found_inf, **kwargs), (None if found_inf else unscaled)


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
    loss scaler). The loss is multiplied by ``loss_weight`` (and the step divided by it), which
    changes nothing in FP32 but puts the gradients where many real networks' are: mostly below
    FP16's smallest normal (6.1e-5), many below its smallest subnormal (6.0e-8).
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
    state = ScalerState(init_scale if mode == "fp16-scaled" else 1.0)
    history = TrainingHistory(mode)

    def loss_of(ps):
        w1, b1, w2, b2 = (q(p) for p in ps)                             # 16-bit copies of the weights
        h = q(torch.tanh(q(q(x) @ w1.T + b1)))                           # (n, hidden)
        out = q(h @ w2.T + b2)                                           # (n, 1)
        return torch.mean((out - y) ** 2)                                # the loss in FP32

    threads = torch.get_num_threads()
    torch.set_num_threads(1)            # a model this small runs fastest (and steadiest) on one thread
    try:
        _train(steps, params, loss_of, loss_weight, lr, mode, state, growth_interval, history)
        with torch.no_grad():
            history.final_loss = float(loss_of(params))
    finally:
        torch.set_num_threads(threads)
    return history


def _train(steps, params, loss_of, loss_weight, lr, mode, state, growth_interval, history) -> None:
    import torch

    for _ in range(steps):
        for p in params:
            p.grad = None
        loss = loss_of(params)
        (loss * loss_weight * state.scale).backward()
        grads = [p.grad.detach().numpy() for p in params]
        history.loss.append(float(loss.detach()))
        history.scale.append(state.scale)
        history.zero_grad_fraction.append(float(np.mean(np.concatenate([gr.ravel() for gr in grads]) == 0)))
        if mode == "fp16-scaled":
            state, update = scaler_step(state, grads, growth_interval=growth_interval)
        else:
            update = [gr.astype(np.float32) for gr in grads]
        history.skipped.append(update is None)
        if update is not None:
            with torch.no_grad():
                for p, gr in zip(params, update):
                    p -= lr / loss_weight * torch.from_numpy(gr)
