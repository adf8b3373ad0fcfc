"""The tuned Triton GEMM, and its speed next to cuBLAS.

Lab 03 has you write the tiled kernel of Triton's tutorial 03 (one program per tile of C: tiles,
masks, strides, grouped launch order, FP32 accumulation). This module is the performance work
built on the same blocking, with another contract: *persistent* kernels (one program per
multiprocessor, each walking the output tiles in the grouped order, so no tail of programs waits
for a multiprocessor and each program's prologue is paid once). ``matmul_kernel_persistent``
takes any strides and dtypes (and runs in Triton's interpreter); ``matmul_kernel_tma`` is fed by
the *tensor memory accelerator* (TMA: a tile is one bulk copy described by a tensor descriptor,
not BLOCK_M x BLOCK_K address computations), for FP16/BF16 matrices with a unit stride along rows
on GPUs of compute capability 9.0 or later (H100, H200). Both launch through ``gpudl._launch``
(a compiled kernel is launched again without the JIT's per-call work: at 1024^3 the host's time
per call is longer than the kernel's). On a GPU ``matmul_triton`` autotunes over
``TRITON_CONFIGS`` (the configurations of both kernels that can run the call), and a later call
of the same shapes, strides and dtypes goes straight to the launch the first one made
(``_lean``); in Triton's interpreter (a CPU) it runs ``INTERPRETER_CONFIG``.

``matmul_kernel_persistent``    the persistent kernel, any strides (its docstring has the algorithm)
``matmul_kernel_tma``           the persistent TMA kernel (Hopper and later, 16-bit inputs)
``TritonConfig``, ``TRITON_CONFIGS``, ``INTERPRETER_CONFIG``   tile shapes and launch options
``matmul_triton``               check, allocate, launch (autotuned on a GPU)
``best_triton_config``          the configuration the autotuner chose for a size
``triton_vs_torch``, ``triton_block_sweep``   TFLOP/s of the kernels (autotuned, or per tile shape)
                                next to torch.matmul, on a GPU
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


import triton                   # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
import triton.language as tl

from .._launch import (Relauncher, aligned, check_runnable, ensure_tma_allocator, fastest, input_precision,
                       interpreting, keep_launch, run_kept)
from ..references import reference


@triton.jit
def _grouped_tile(tile_id, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """Tile ``tile_id`` in the grouped order: GROUP_M tile-rows down a column, then the next column."""
    tiles_in_group = GROUP_M * tiles_n
    first_pid_m = (tile_id // tiles_in_group) * GROUP_M
    group_size_m = min(tiles_m - first_pid_m, GROUP_M)
    return first_pid_m + (tile_id % group_size_m), (tile_id % tiles_in_group) // group_size_m


@triton.jit
def matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
                             stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    """C = A @ B, persistent, any strides and dtypes: program p computes tiles p, p + NUM_SMS, ...

        for each tile (m, n) of this program, in the grouped order:
            acc = zeros(BLOCK_M, BLOCK_N) in FP32
            for k in range(0, K, BLOCK_K):          # num_stages loads in flight
                acc += A[m, k] @ B[k, n]            # past the K edge: zeros
            C[m, n] = acc                           # in C's dtype, masked at the edges

    The launch has one program per multiprocessor (per cluster of ``num_ctas``), or one per
    tile when there are fewer tiles; a program's rows of A and columns of B past the edges wrap
    around (``% M``, ``% N``: in bounds, and contiguous where the matrix is, which a clamp to 0
    would hide from the compiler; their products land in rows and columns of the tile that are
    never stored), so only the K edge needs a mask on the loads.
    """
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    ks0 = tl.arange(0, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        pid_m, pid_n = _grouped_tile(tile_id, tiles_m, tiles_n, GROUP_M)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        rows_a = rows % M
        cols_b = cols % N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            ks = ki * BLOCK_K + ks0
            a = tl.load(a_ptr + (rows_a[:, None] * stride_am + ks[None, :] * stride_ak), mask=ks[None, :] < K,
                        other=0.0)
            b = tl.load(b_ptr + (ks[:, None] * stride_bk + cols_b[None, :] * stride_bn), mask=ks[:, None] < K,
                        other=0.0)
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        tl.store(c_ptr + (rows[:, None] * stride_cm + cols[None, :] * stride_cn), acc.to(c_ptr.dtype.element_ty),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def matmul_kernel_tma(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    """C = A @ B, persistent, with TMA: program p computes tiles p, p + NUM_SMS, p + 2 NUM_SMS, ...

        for each tile (m, n) of this program, in the grouped order:
            acc = zeros(BLOCK_M, BLOCK_N) in FP32
            for k in range(0, K, BLOCK_K):          # num_stages TMA copies in flight
                acc += A[m, k] @ B[k, n]            # tiles past the edges arrive as zeros
            C[m, n] = acc                           # the TMA store drops what lies past the edges

    One launch of NUM_SMS programs instead of one program per tile: no tail of programs
    waiting for a multiprocessor, and each program's prologue is paid once. The tensor
    descriptors (shape, strides, tile shape: what a TMA copy needs) are made on the device.
    """
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    for tile_id in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        pid_m, pid_n = _grouped_tile(tile_id, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
            b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


@dataclass(frozen=True)
class TritonConfig:
    """Tile sizes and compilation options of one launch of ``matmul_kernel_persistent`` (or, with
    ``tma=True``, of ``matmul_kernel_tma``). ``num_ctas=2`` runs each program as a cluster of
    two thread blocks on two multiprocessors (Hopper and later), each with half of the
    BLOCK_M x BLOCK_N tile."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    num_warps: int = 4
    num_stages: int = 3
    tma: bool = False
    num_ctas: int = 1

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "block_k"):
            v = getattr(self, name)
            if v < 16 or v & (v - 1):
                raise ValueError(f"{name} must be a power of two >= 16 (tl.dot needs it), got {v}")
        if self.group_m < 1:
            raise ValueError(f"group_m must be >= 1, got {self.group_m}")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"num_warps must be a power of two up to 16, got {self.num_warps}")
        if self.num_ctas not in (1, 2):
            raise ValueError(f"num_ctas must be 1 or 2 (a cluster of two on compute capability 9.0+), got {self.num_ctas}")

    @property
    def label(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k}" + (" tma" if self.tma else "")
                + (f" cluster {self.num_ctas}" if self.num_ctas > 1 else ""))

    def meta(self) -> dict[str, int]:
        return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "BLOCK_K": self.block_k, "GROUP_M": self.group_m}


# The configurations the autotuner tries on a GPU, one space for every Hopper (the H100's and
# the H200's measurements chose from the same list) and for FP16 and BF16: the pointer
# kernel's tiles (any dtype, any strides: FP32 and odd layouts need them) and the TMA
# kernel's (16-bit, rows with a unit stride, compute capability 9.0+). Each call times
# only those that can run it. Big tiles with 3-4 stages for large problems; tiles of 128 x 64
# so that a 1024^3 problem (128 tiles) still has a tile for nearly every one of 132 SMs.
# At 1024^3 cuBLAS runs a 128 x 64 tile, 8 stages deep, in clusters of two multiprocessors
# (its kernel's name says so: ``nvjet_sm90_hsh_128x64_64x8_1x2_...``). The pointer kernel's
# 128 x 64 x 64 ran faster the deeper its pipeline, up to 6-7 stages (4 and 5 lost in every
# probe), and a 256 x 64 tile in a cluster of two (``num_ctas=2``: each multiprocessor of the
# pair computes 128 x 64 of it) faster still; 256 x 256 in a cluster of two matches the TMA
# kernel at 4096^3. Clusters need compute capability 9.0+ and are tried only there.
TRITON_CONFIGS = (
    TritonConfig(128, 256, 64, 8, num_warps=8, num_stages=3),
    TritonConfig(256, 64, 64, 8, num_warps=4, num_stages=6, num_ctas=2),
    TritonConfig(256, 256, 64, 8, num_warps=8, num_stages=3, num_ctas=2),
    TritonConfig(256, 128, 64, 8, num_warps=8, num_stages=3),
    TritonConfig(128, 128, 64, 8, num_warps=8, num_stages=3),
    TritonConfig(128, 128, 64, 8, num_warps=4, num_stages=4),
    TritonConfig(128, 64, 64, 8, num_warps=4, num_stages=6),
    TritonConfig(128, 64, 64, 8, num_warps=4, num_stages=7),
    TritonConfig(64, 128, 64, 8, num_warps=4, num_stages=4),
    TritonConfig(64, 64, 64, 8, num_warps=4, num_stages=4),
    TritonConfig(64, 64, 32, 8, num_warps=2, num_stages=5),
    TritonConfig(128, 256, 64, 8, num_warps=8, num_stages=3, tma=True),
    TritonConfig(128, 256, 64, 4, num_warps=8, num_stages=3, tma=True),
    TritonConfig(256, 128, 64, 8, num_warps=8, num_stages=3, tma=True),
    TritonConfig(128, 128, 64, 8, num_warps=8, num_stages=4, tma=True),
    TritonConfig(128, 64, 64, 8, num_warps=4, num_stages=4, tma=True),
    TritonConfig(128, 64, 64, 8, num_warps=4, num_stages=5, tma=True),
    TritonConfig(64, 128, 64, 8, num_warps=4, num_stages=4, tma=True),
    TritonConfig(64, 128, 64, 8, num_warps=4, num_stages=5, tma=True),
)
# In the interpreter every program runs one after another in Python: few, large tiles are fastest.
INTERPRETER_CONFIG = TritonConfig(32, 32, 32, 4, num_warps=4, num_stages=1)


_SMS: dict[int, tuple[int, bool, bool]] = {}      # device index -> (multiprocessors, has TMA, has clusters)


def _device_facts(device: int) -> tuple[int, bool, bool]:
    facts = _SMS.get(device)
    if facts is None:
        import torch

        props = torch.cuda.get_device_properties(device)
        facts = _SMS[device] = (props.multi_processor_count,
                                props.major >= 9 and hasattr(tl, "make_tensor_descriptor"), props.major >= 9)
    return facts


def _tma_ok(a: Any, b: Any, out: Any) -> bool:
    """Whether ``matmul_kernel_tma`` can run this call: a GPU with TMA (compute capability
    9.0+), 16-bit data, each matrix's rows with a unit stride, 16-byte aligned rows and bases."""
    import torch

    if not a.is_cuda or a.dtype not in (torch.float16, torch.bfloat16) or not _device_facts(a.get_device())[1]:
        return False
    return all(t.stride(1) == 1 and t.stride(0) % 8 == 0 and t.stride(0) >= t.shape[1] and t.data_ptr() % 16 == 0
               for t in (a, b, out))


_PLAIN = Relauncher(matmul_kernel_persistent)
_TMA = Relauncher(matmul_kernel_tma)


def _call(cfg: TritonConfig, a: Any, b: Any, out: Any, precision: str) -> tuple:
    """What launching ``cfg`` on (a, b, out) takes: the relauncher, grid, runtime arguments
    (a, b, out first), constexprs and options, and the tag that names them."""
    M, K = a.shape
    N = b.shape[1]
    tiles = -(-M // cfg.block_m) * -(-N // cfg.block_n)
    meta = dict(cfg.meta(), num_warps=cfg.num_warps, num_stages=cfg.num_stages, num_ctas=cfg.num_ctas)
    if cfg.tma:
        device = a.get_device()
        sms = _device_facts(device)[0]
        return (_TMA, (min(sms, tiles),), (a, b, out, M, N, K, a.stride(0), b.stride(0), out.stride(0)),
                dict(meta, NUM_SMS=sms), (cfg, device))
    # In the interpreter programs run one after another: one per tile, nothing to gain from fewer.
    programs = tiles if interpreting() or not a.is_cuda else _device_facts(a.get_device())[0] // cfg.num_ctas
    return (_PLAIN, (min(programs, tiles),), (a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                               out.stride(0), out.stride(1)),
            dict(meta, NUM_SMS=programs, INPUT_PRECISION=precision), (cfg, precision, a.get_device()))


def _launch(cfg: TritonConfig, a: Any, b: Any, out: Any, precision: str) -> None:
    if cfg.tma:
        ensure_tma_allocator()
    relauncher, grid, args, meta, tag = _call(cfg, a, b, out, precision)
    relauncher.launch(grid, args, meta, tag)


class _Autotuner:
    """``matmul_triton``'s autotuner: the first call of each (M, N, K, dtype, TMA or not, device)
    times every configuration of ``TRITON_CONFIGS`` that can run it and keeps the fastest
    (``gpudl._launch.fastest``: the GPU warmed first, the three fastest raced again in turns);
    later calls launch that one directly. Its
    ``cache`` maps those keys to the chosen ``TritonConfig``."""

    def __init__(self, configs: Sequence[TritonConfig]) -> None:
        self.configs = tuple(configs)
        self.cache: dict[tuple, TritonConfig] = {}

    def run(self, a: Any, b: Any, out: Any, precision: str) -> TritonConfig:
        """Launch the chosen configuration (choosing it first if need be); return it."""
        M, K = a.shape
        tma = _tma_ok(a, b, out)
        key = (M, b.shape[1], K, a.dtype, tma, a.get_device(), precision)
        cfg = self.cache.get(key)
        if cfg is None:
            cfg = self.cache[key] = self._tune(a, b, out, precision, tma)
        _launch(cfg, a, b, out, precision)
        return cfg

    def _tune(self, a: Any, b: Any, out: Any, precision: str, tma: bool) -> TritonConfig:
        clusters = _device_facts(a.get_device())[2]
        return fastest([cfg for cfg in self.configs if (tma or not cfg.tma) and (clusters or cfg.num_ctas == 1)],
                       lambda cfg: _launch(cfg, a, b, out, precision))


_autotuned = _Autotuner(TRITON_CONFIGS)

# The lean path. At 1024^3 a GEMM runs for ~10 us, while the checks above, the autotuner's
# lookup and the relauncher's cost ~30-60 us of Python per call on the lent GPUs' hosts
# (cuBLAS through torch: ~18 us): timed back to back, the GPU waits for the host. So once a
# call has gone the long way, the launch it made is kept under the call's *signature* (types,
# dtypes, shapes, strides, devices, and TF32's setting for FP32): a later call with the same
# signature, 16-byte aligned inputs and no ``out`` or ``config`` skips straight to that launch.
_PLANS: dict[tuple, Any] = {}


def _signature(a: Any, b: Any) -> tuple | None:
    import torch

    if type(a) is not torch.Tensor or type(b) is not torch.Tensor:
        return None
    return (a.dtype, b.dtype, a.shape, b.shape, a.stride(), b.stride(), a.device, b.device,
            a.dtype is torch.float32 and torch.backends.cuda.matmul.allow_tf32)


def _lean(a: Any, b: Any) -> Any:
    """``a @ b`` through a kept launch, or None when there is none for this call."""
    plan = _PLANS.get(_signature(a, b)) if _PLANS else None
    if plan is None or not aligned(a, b):
        return None
    import torch

    out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)     # 16-byte aligned
    return out if run_kept(_PLANS, plan, a, b, out) else None


def _keep(cfg: TritonConfig, a: Any, b: Any, out: Any, precision: str) -> None:
    """Keep the launch of ``cfg`` that the call (a, b) -> out just made, for ``_lean``."""
    sig = _signature(a, b)
    if sig is None or not aligned(a, b, out):
        return
    relauncher, grid, args, _, tag = _call(cfg, a, b, out, precision)
    keep_launch(_PLANS, sig, relauncher, grid, args, tag, 3, cfg.tma)


@reference
def matmul_triton(a: Any, b: Any, *, config: TritonConfig | None = None, out: Any = None) -> Any:
    """``a @ b`` with ``matmul_kernel_persistent`` or ``matmul_kernel_tma`` (torch tensors, 2-D,
    FP16, BF16 or FP32; any strides). Marked as a reference so that lab 03's Triton exercise
    cannot call it.

    The result has the inputs' dtype (accumulation is in FP32). ``config`` fixes the tiles
    (and, with ``tma=True``, the kernel); without it a GPU autotunes over ``TRITON_CONFIGS``
    (once per M, N, K and dtype; later calls go straight to the chosen kernel) and the
    interpreter uses ``INTERPRETER_CONFIG``. ``out`` (M, N), when given, receives the result.
    """
    if out is None and config is None:
        fast = _lean(a, b)
        if fast is not None:
            return fast
    import torch

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError(f"matmul_triton takes torch tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"expected two matrices, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"a and b must share a dtype among float16, bfloat16, float32; got {a.dtype}, {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"a is on {a.device}, b on {b.device}")
    check_runnable(a)
    interpreted = interpreting()
    if a.dtype == torch.bfloat16 and interpreted:
        raise TypeError("Triton's interpreter cannot multiply bfloat16 (NumPy has no bfloat16: tl.dot would read "
                        "the bits as integers); use float16 or float32 on a CPU, bfloat16 on a GPU")
    M, K = a.shape
    N = b.shape[1]
    allocated = out is None
    if allocated:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (M, N) or out.dtype != a.dtype or out.device != a.device:
        raise ValueError(f"out must be ({M}, {N}) {a.dtype} on {a.device}, got {tuple(out.shape)} {out.dtype}")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    precision = input_precision(a.dtype)     # FP32 in TF32 only where torch's matmuls would be
    if config is None and not interpreted:
        cfg = _autotuned.run(a, b, out, precision)
        if allocated:
            _keep(cfg, a, b, out, precision)
        return out
    cfg = config or INTERPRETER_CONFIG
    if cfg.tma and not _tma_ok(a, b, out):
        raise ValueError(f"{cfg} needs matmul_kernel_tma's conditions: a GPU of compute capability 9.0+, "
                         "float16/bfloat16, rows with a unit stride and 16-byte aligned")
    if cfg.num_ctas > 1 and not (a.is_cuda and _device_facts(a.get_device())[2]):
        raise ValueError(f"{cfg} runs in clusters of thread blocks: a GPU of compute capability 9.0+")
    _launch(cfg, a, b, out, precision)
    return out


def best_triton_config(M: int, N: int, K: int) -> TritonConfig | None:
    """The configuration the autotuner chose for (M, N, K) on this GPU, if it has run."""
    for key, cfg in _autotuned.cache.items():
        if tuple(key[:3]) == (M, N, K):
            return cfg
    return None


# --- measurements -------------------------------------------------------------------------------

_TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def _peak(dtype: str) -> float | None:
    from .. import hardware

    spec = hardware.detect()
    if spec is None:
        return None
    try:
        return hardware.peak_flops(spec, dtype)
    except ValueError:
        return None


def _tflops_cuda(fn: Any, flops: int, what: str, peak: float | None, budget_s: float = 1.0) -> float:
    from .. import timing

    m = timing.time_cuda(fn, what=what, budget_s=budget_s)
    rate = flops / m.median
    if peak:
        timing.check_plausible(rate, peak, what=what)
    return rate / 1e12


def triton_vs_torch(n: int, dtype: str = "fp16", *, budget_s: float = 1.0, rounds: int = 15,
                    warm_s: float = 1.0) -> dict[str, Any]:
    """TFLOP/s of ``matmul_triton`` (autotuned) and ``torch.matmul`` (cuBLAS) on ``n^3`` in
    ``dtype``, on the GPU, side by side.

    A GPU boosts its clock after idling and settles lower under sustained load, over about a
    second: whichever kernel is timed first would get the boost. So both first run untimed, in
    turns, for ``warm_s``; then ``rounds`` rounds time one, then the other, in the opposite
    order every other round (neither always follows the other). Each round gives a ratio of the
    two medians, and ``ratio`` is the median of those paired ratios (robust to a round that a
    clock change or someone else's work spoiled); the TFLOP/s are medians over rounds. At 1024^3
    a run takes ~10 us and one round's ratio strays by up to 5% either way: hence 15 rounds.

    ``kernel ratio`` does the same with each call captured in a CUDA graph and replayed. The two
    differ when the host takes longer to issue a call than the GPU to run it (with the L2 flush
    before it): the GPU then waits for the host and the per-call time measures the host. At
    1024^3 on a slow host, ``matmul_triton``'s Python (checks, the autotuner's lookup, Triton's
    launcher) is that case; cuBLAS's C++ path is not."""
    import statistics
    import time

    import torch

    from .. import timing

    g = torch.Generator(device="cuda").manual_seed(0)
    dt = getattr(torch, _TORCH_DTYPES[dtype])
    a = torch.randn(n, n, device="cuda", generator=g).to(dt)    # (n, n)
    b = torch.randn(n, n, device="cuda", generator=g).to(dt)    # (n, n)
    ref = torch.matmul(a, b)
    got = matmul_triton(a, b)                                    # autotunes on the first call
    err = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    peak, flops = _peak(dtype), 2 * n ** 3          # a multiply-add is two FLOPs
    calls = {"triton": lambda: matmul_triton(a, b), "cuBLAS": lambda: torch.matmul(a, b)}
    graphs = {f"{name} graph": timing.cuda_graphed(fn) for name, fn in calls.items()}
    timed = calls | graphs
    start = time.perf_counter()
    while time.perf_counter() - start < warm_s:                 # to the clock of sustained work
        for fn in timed.values():
            fn()
        torch.cuda.synchronize()
    rates: dict[str, list[float]] = {name: [] for name in timed}
    for i in range(rounds):
        for name, fn in (timed.items() if i % 2 == 0 else reversed(timed.items())):
            rates[name].append(_tflops_cuda(fn, flops, f"{name} {n}^3 {dtype}", peak, budget_s / rounds / 4))
    paired = [t / c for t, c in zip(rates["triton"], rates["cuBLAS"])]
    paired_graph = [t / c for t, c in zip(rates["triton graph"], rates["cuBLAS graph"])]
    cfg = best_triton_config(n, n, n)
    return {"n": n, "dtype": dtype, "triton TFLOP/s": statistics.median(rates["triton"]),
            "cuBLAS TFLOP/s": statistics.median(rates["cuBLAS"]),
            "ratio": statistics.median(paired), "kernel ratio": statistics.median(paired_graph),
            "round ratios": paired, "config": (f"{cfg.label} w{cfg.num_warps} s{cfg.num_stages}" if cfg else ""),
            "max rel err": err}


def triton_block_sweep(n: int, configs: Sequence[TritonConfig] | None = None, dtype: str = "fp16", *,
                       budget_s: float = 0.5) -> list[dict[str, Any]]:
    """TFLOP/s of ``matmul_kernel_persistent`` at ``n^3`` for each tile configuration (default: a
    ladder from 32x32 to 128x256), on the GPU; the reference is ``torch.matmul``."""
    import torch

    configs = configs or (TritonConfig(32, 32, 32, 8, 2, 3), TritonConfig(64, 64, 32, 8, 4, 4),
                          TritonConfig(128, 64, 32, 8, 4, 4), TritonConfig(128, 128, 32, 8, 4, 4),
                          TritonConfig(128, 128, 64, 8, 8, 3), TritonConfig(128, 256, 64, 8, 8, 3))
    g = torch.Generator(device="cuda").manual_seed(0)
    dt = getattr(torch, _TORCH_DTYPES[dtype])
    a = torch.randn(n, n, device="cuda", generator=g).to(dt)
    b = torch.randn(n, n, device="cuda", generator=g).to(dt)
    peak, flops = _peak(dtype), 2 * n ** 3          # a multiply-add is two FLOPs
    cub = _tflops_cuda(lambda: torch.matmul(a, b), flops, f"torch.matmul {n}^3", peak, budget_s)
    rows = []
    for cfg in configs:
        tf = _tflops_cuda(lambda: matmul_triton(a, b, config=cfg), flops, f"matmul_kernel_persistent {cfg.label}", peak,
                          budget_s)
        rows.append({"tile": cfg.label, "warps": cfg.num_warps, "stages": cfg.num_stages, "n": n,
                     "TFLOP/s": tf, "cuBLAS TFLOP/s": cub, "ratio": tf / cub})
    return rows
