"""The INT8 GEMM on tensor cores: INT8 x INT8 -> INT32 in Triton, the scales in the epilogue.

An INT8 tensor core multiplies 8-bit integers and sums the products exactly in INT32, at twice
the FP16 rate on an H100 or H200 (``gpudl.hardware``). Whether a program gets that rate depends
on the *layout* of its operands (Unit 05: a matrix is a shape and strides). Hopper's INT8 MMA
instructions (``wgmma`` with ``.s8`` operands) read both operand tiles *K-major*: consecutive
k of a row of A, and consecutive k of a column of B, adjacent in memory. (Only 16-bit operands
may be transposed by the instruction.) So:

- A (M, K) row-major, ``stride(1) == 1``: K-major already;
- B (K, N) must be *column-major*, ``stride(0) == 1``: ``W.T`` of a weight ``W`` (N, K) stored
  row-major the way ``nn.Linear`` stores it is exactly that, as a view. ``W.T.contiguous()`` (or
  NumPy's ``ascontiguousarray(W.T)``) makes B row-major, and then every tile must be transposed
  before the tensor cores can read it: cuBLASLt's INT8 kernels (``torch._int_mm``) fall back to a
  far slower path, and a Triton kernel's ``tl.dot`` to a shuffle through shared memory.

``int8_matmul_triton`` therefore lays B out column-major once (a copy only when it is not) and
reads it K-major. ``gpudl bench inference`` shows both layouts of ``torch._int_mm`` next to this
kernel and cuBLAS FP16.

The epilogue is the quantized linear layer's (``quantization``): with scales, the INT32 sums
are converted to FP32 and multiplied by ``scale_a[m] * scale_b[n]`` (one number per tensor, or
one per row of A and per column of B: per-channel weight scales), and a float bias added,
while the tile is still in registers; without, the INT32 sums are stored as they are.

``int8_matmul_kernel``       one program per output tile (grouped order), any strides; on a GPU
                             B is read K-major; runs in Triton's interpreter
``int8_matmul_kernel_tma``   persistent, A and B^T fed by the tensor memory accelerator (TMA,
                             compute capability 9.0+), the same epilogue
``Int8Config``, ``INT8_CONFIGS``, ``INT8_INTERPRETER_CONFIG``, ``SMALL_CONFIG``   tiles and
                             launch options
``int8_matmul_triton``       check, lay out, launch (autotuned on a GPU); a repeated call of the
                             same form goes straight to the launch it kept (the lean path);
                             marked as a reference so that lab 09's INT8 layer cannot call it
``best_int8_config``         the configuration the autotuner chose for a call's shape
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import triton                   # gpudl's __init__ has set TRITON_INTERPRET=1 when there is no GPU
import triton.language as tl

from .._launch import (Relauncher, aligned, check_runnable, ensure_tma_allocator, fastest, interpreting, keep_launch,
                       run_kept)
from ..references import reference
from .triton_kernel import _grouped_tile


@triton.jit
def _epilogue(acc, rows, cols, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, stride_cm, stride_cn, stride_sa, stride_sb,
              SCALED: tl.constexpr, HAS_BIAS: tl.constexpr):
    """Store the INT32 tile, or ``acc * scale_a[rows] * scale_b[cols] (+ bias[cols])`` in FP32;
    a scale of stride 0 is one number for the whole tensor."""
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    if SCALED:
        sa = tl.load(sa_ptr + rows * stride_sa, mask=rows < M, other=0.0)
        sb = tl.load(sb_ptr + cols * stride_sb, mask=cols < N, other=0.0)
        y = acc.to(tl.float32) * sa[:, None] * sb[None, :]
        if HAS_BIAS:
            y += tl.load(bias_ptr + cols, mask=cols < N, other=0.0)[None, :]
        tl.store(c_ptrs, y.to(c_ptr.dtype.element_ty), mask=inside)
    else:
        tl.store(c_ptrs, acc, mask=inside)


@triton.jit
def int8_matmul_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, K,
                       stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_sa, stride_sb,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                       EVEN_K: tl.constexpr, SCALED: tl.constexpr, HAS_BIAS: tl.constexpr):
    """C = A @ B for int8 A (M, K) and B (K, N), one program per tile of C:

        (m, n) = the program's tile, in the grouped order (GROUP_M tile-rows share columns of B in L2)
        acc = zeros(BLOCK_M, BLOCK_N) in INT32
        for k in range(0, K, BLOCK_K):              # num_stages loads in flight
            acc += A[m, k] @ B[k, n]                # INT8 tensor cores; past the K edge: zeros
        C[m, n] = acc, or acc * scale_a * scale_b (+ bias) in FP32, masked at the edges

    Rows of A and columns of B past the edges wrap around (``% M``, ``% N``: in bounds; their
    products land in rows and columns that are never stored), so only K needs a mask, and none
    when BLOCK_K divides K (``EVEN_K``). With ``stride_bk == 1`` (B column-major) the B tile is
    K-major, the layout the INT8 MMA reads.
    """
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _grouped_tile(tl.program_id(0), tiles_m, tiles_n, GROUP_M)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    a_rows = a_ptr + (rows % M)[:, None] * stride_am                                     # (BLOCK_M, 1)
    b_cols = b_ptr + (cols % N)[None, :] * stride_bn                                     # (1, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for ki in range(tl.cdiv(K, BLOCK_K)):
        ks = ki * BLOCK_K + tl.arange(0, BLOCK_K)
        if EVEN_K:
            a = tl.load(a_rows + ks[None, :] * stride_ak)                                # (BLOCK_M, BLOCK_K)
            b = tl.load(b_cols + ks[:, None] * stride_bk)                                # (BLOCK_K, BLOCK_N)
        else:
            a = tl.load(a_rows + ks[None, :] * stride_ak, mask=ks[None, :] < K, other=0)
            b = tl.load(b_cols + ks[:, None] * stride_bk, mask=ks[:, None] < K, other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)  # int8 x int8 -> int32
    _epilogue(acc, rows, cols, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, stride_cm, stride_cn, stride_sa, stride_sb,
              SCALED, HAS_BIAS)


@triton.jit
def int8_matmul_kernel_tma(a_ptr, bt_ptr, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, K,
                           stride_am, stride_btn, stride_cm, stride_cn, stride_sa, stride_sb,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, SCALED: tl.constexpr,
                           HAS_BIAS: tl.constexpr):
    """C = A @ B, persistent, with TMA: program p computes tiles p, p + NUM_SMS, ... of C.

    B arrives as B^T (N, K) row-major (``bt_ptr``: B column-major is that matrix), so both
    descriptors' tiles are K-major; a tile is one bulk copy, and tiles past the edges arrive as
    zeros. The epilogue is ``int8_matmul_kernel``'s.
    """
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(bt_ptr, shape=[N, K], strides=[stride_btn, 1], block_shape=[BLOCK_N, BLOCK_K])
    for tile_id in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        pid_m, pid_n = _grouped_tile(tile_id, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
        for ki in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])         # (BLOCK_M, BLOCK_K)
            bt = b_desc.load([pid_n * BLOCK_N, ki * BLOCK_K])        # (BLOCK_N, BLOCK_K)
            acc = tl.dot(a, bt.T, acc, out_dtype=tl.int32)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        _epilogue(acc, rows, cols, c_ptr, sa_ptr, sb_ptr, bias_ptr, M, N, stride_cm, stride_cn, stride_sa,
                  stride_sb, SCALED, HAS_BIAS)


@dataclass(frozen=True)
class Int8Config:
    """Tiles and compilation options of one launch of ``int8_matmul_kernel`` (or, with
    ``tma=True``, of ``int8_matmul_kernel_tma``)."""

    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    num_warps: int = 8
    num_stages: int = 3
    tma: bool = False

    def __post_init__(self) -> None:
        for name in ("block_m", "block_n", "block_k"):
            v = getattr(self, name)
            if v < 16 or v & (v - 1):
                raise ValueError(f"{name} must be a power of two >= 16 (tl.dot needs it), got {v}")
        if self.group_m < 1:
            raise ValueError(f"group_m must be >= 1, got {self.group_m}")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"num_warps must be a power of two up to 16, got {self.num_warps}")
        if self.num_stages < 1:
            raise ValueError(f"num_stages must be >= 1, got {self.num_stages}")

    @property
    def label(self) -> str:
        return f"{self.block_m}x{self.block_n}x{self.block_k}" + (" tma" if self.tma else "")

    def meta(self) -> dict[str, int]:
        return {"BLOCK_M": self.block_m, "BLOCK_N": self.block_n, "BLOCK_K": self.block_k, "GROUP_M": self.group_m,
                "num_warps": self.num_warps, "num_stages": self.num_stages}


# What the autotuner tries on a GPU, for Hopper (H100, H200), chosen by timing 51 configurations at
# 2048^3 and 8192^3 on an H100 (scripts/int8_tune.py, November 2026). Large problems: the
# persistent TMA kernel with 128 x 256 x 128 tiles (BLOCK_K = 128 bytes of int8, one 128-byte
# swizzled row of shared memory; 8 warps for the 128 x 256 INT32 accumulator; 3-4 stages of 48 KB)
# was fastest, the plain kernel with the same tiles within 8%. At 2048^3, where 128 x 256 tiles
# make one wave of 128 programs on 132 multiprocessors, 128 x 128 x 64 tiles with 4 warps and
# 4-6 stages (80 KB of shared memory: two programs share a multiprocessor, so one's loads and
# stores overlap the other's MMAs) won. Two stages starve the tensor cores (0.8x FP16), and
# 256 x 256 tiles spill the accumulator (0.2-0.5x). A configuration that does not compile or fit
# on the GPU at hand is skipped; ``gpudl bench inference`` reports the one chosen.
INT8_CONFIGS = (
    Int8Config(128, 256, 128, 8, num_warps=8, num_stages=3, tma=True),
    Int8Config(128, 256, 128, 8, num_warps=8, num_stages=4, tma=True),
    Int8Config(256, 128, 128, 8, num_warps=8, num_stages=3, tma=True),
    Int8Config(128, 128, 256, 8, num_warps=8, num_stages=3, tma=True),
    Int8Config(128, 256, 128, 8, num_warps=8, num_stages=3),
    Int8Config(128, 256, 128, 8, num_warps=8, num_stages=4),
    Int8Config(256, 128, 128, 8, num_warps=8, num_stages=4),
    Int8Config(256, 128, 128, 16, num_warps=8, num_stages=3),
    Int8Config(128, 128, 64, 8, num_warps=4, num_stages=5),
    Int8Config(128, 128, 64, 8, num_warps=4, num_stages=4),
    Int8Config(128, 128, 64, 8, num_warps=8, num_stages=5),
    Int8Config(128, 128, 64, 4, num_warps=4, num_stages=6),
    # added in a second round (November 28): 128-byte K tiles, two programs per multiprocessor; the
    # autotuner chose the first at 2048^3 and 4096^3 on an H100 (course/data/bench_inference.json).
    # Clusters of two (num_ctas=2) were tried too and dropped: Triton 3.6 cannot compile the scaled
    # epilogue in a cluster.
    Int8Config(128, 128, 128, 8, num_warps=4, num_stages=3),
    Int8Config(128, 128, 128, 8, num_warps=8, num_stages=3, tma=True),
)
# In the interpreter every program runs one after another in Python: few, large tiles are fastest.
INT8_INTERPRETER_CONFIG = Int8Config(32, 32, 32, 4, num_warps=4, num_stages=1)
# Below SMALL_OPS operations (2 M N K) a product takes microseconds on a GPU, less than timing the
# candidates would: it runs SMALL_CONFIG, untuned.
SMALL_OPS = 2 ** 27
SMALL_CONFIG = Int8Config(64, 64, 64, 8, num_warps=4, num_stages=3)

_PLAIN = Relauncher(int8_matmul_kernel)
_TMA = Relauncher(int8_matmul_kernel_tma)
_SMS: dict[int, tuple[int, bool]] = {}          # device index -> (multiprocessors, has TMA)


def _device_facts(device: int) -> tuple[int, bool]:
    facts = _SMS.get(device)
    if facts is None:
        import torch

        props = torch.cuda.get_device_properties(device)
        facts = _SMS[device] = (props.multi_processor_count, props.major >= 9 and hasattr(tl, "make_tensor_descriptor"))
    return facts


def _tma_ok(a: Any, b: Any) -> bool:
    """Whether ``int8_matmul_kernel_tma`` can run: a compiled kernel on compute capability 9.0+,
    A row-major and B column-major (both K-major) with 16-byte aligned rows and bases."""
    if interpreting() or not a.is_cuda or not _device_facts(a.get_device())[1]:
        return False
    return (a.stride(1) == 1 and b.stride(0) == 1 and a.stride(0) % 16 == 0 and b.stride(1) % 16 == 0
            and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0)


def _call(cfg: Int8Config, a: Any, b: Any, out: Any, sa: Any, sb: Any, bias: Any) -> tuple:
    """The launch of ``cfg`` for ``out = a @ b`` (INT32), or with the scales' epilogue when ``sa``
    is given (``sa``, ``sb``: FP32 vectors of stride 0 or 1; ``bias`` FP32 or None), as
    (relauncher, grid, arguments, constexprs and options, tag). The first six arguments are the
    pointers (a, b, out, sa, sb, bias; unused ones are ``out``), which ``_keep`` leaves open."""
    M, K = a.shape
    N = b.shape[1]
    scaled, has_bias = sa is not None, bias is not None
    ptrs = (sa, sb, bias if has_bias else sa) if scaled else (out, out, out)      # unused pointers: any tensor
    strides = (sa.stride(0) if sa.numel() > 1 else 0, sb.stride(0) if sb.numel() > 1 else 0) if scaled else (0, 0)
    tiles = -(-M // cfg.block_m) * -(-N // cfg.block_n)
    meta = dict(cfg.meta(), SCALED=scaled, HAS_BIAS=has_bias)
    if cfg.tma:
        sms = _device_facts(a.get_device())[0]
        meta["NUM_SMS"] = sms
        return (_TMA, (min(sms, tiles),), (a, b, out, *ptrs, M, N, K, a.stride(0), b.stride(1), out.stride(0),
                                           out.stride(1), *strides), meta, (cfg, scaled, has_bias, a.get_device()))
    even_k = K % cfg.block_k == 0
    meta["EVEN_K"] = even_k
    return (_PLAIN, (tiles,), (a, b, out, *ptrs, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               out.stride(0), out.stride(1), *strides), meta,
            (cfg, scaled, has_bias, even_k, a.get_device()))          # every constexpr not fixed by cfg


def _launch(cfg: Int8Config, a: Any, b: Any, out: Any, sa: Any, sb: Any, bias: Any) -> None:
    """One launch of ``cfg`` (``_call``'s)."""
    relauncher, grid, args, meta, tag = _call(cfg, a, b, out, sa, sb, bias)
    if cfg.tma:
        ensure_tma_allocator()
    relauncher.launch(grid, args, meta, tag)


class _Autotuner:
    """The first call of each (M, N, K, layouts, epilogue, device) launches every configuration
    once (those that fail to compile or fit are skipped and kept in ``skipped``), then times the
    rest (``gpudl._launch.fastest``) and keeps the fastest in ``cache``; later calls launch it."""

    def __init__(self, configs: Sequence[Int8Config]) -> None:
        self.configs = tuple(configs)
        self.cache: dict[tuple, Int8Config] = {}
        self.skipped: dict[Int8Config, str] = {}

    def run(self, a: Any, b: Any, out: Any, sa: Any, sb: Any, bias: Any) -> Int8Config:
        key = (a.shape[0], b.shape[1], a.shape[1], a.stride(), b.stride(), sa is not None, bias is not None,
               out.dtype, a.get_device())
        cfg = self.cache.get(key)
        if cfg is None:
            cfg = self.cache[key] = self._tune(a, b, out, sa, sb, bias)
        _launch(cfg, a, b, out, sa, sb, bias)
        return cfg

    def _tune(self, a: Any, b: Any, out: Any, sa: Any, sb: Any, bias: Any) -> Int8Config:
        import torch

        tma = _tma_ok(a, b)
        runs = []
        for cfg in self.configs:
            if cfg.tma and not tma:
                continue
            try:
                _launch(cfg, a, b, out, sa, sb, bias)
                torch.cuda.synchronize()
                runs.append(cfg)
            except Exception as exc:        # noqa: BLE001 - a tile this GPU or Triton cannot run
                self.skipped[cfg] = f"{type(exc).__name__}: {str(exc)[:200]}"
        if not runs:
            raise RuntimeError("no INT8 configuration runs on this GPU: " + "; ".join(
                f"{c.label}: {why}" for c, why in self.skipped.items()))
        return fastest(runs, lambda cfg: _launch(cfg, a, b, out, sa, sb, bias))


_autotuned = _Autotuner(INT8_CONFIGS)


def _scale_vector(s: Any, length: int, device: Any, what: str) -> Any:
    """``s`` (a number, or ``length`` numbers) as an FP32 vector on ``device``."""
    import torch

    t = torch.as_tensor(s, dtype=torch.float32, device=device).reshape(-1)
    if t.numel() not in (1, length):
        raise ValueError(f"{what} must be one number or {length}, got {t.numel()}")
    return t.contiguous()


# The lean path (as ``triton_kernel``'s for FP16). At 2048^3 the kernel runs for about 21 us on an
# H200, while the checks, scale vectors, autotuner lookup and relauncher below cost 60-80 us of
# Python per call on the lent GPUs' hosts (torch.matmul: ~20 us; ``scripts/int8_probe.py --flush``).
# Timed back to back after a flush of L2 (~80 us), the GPU then waits for the host in some runs and
# not in others: the per-call rows of ``gpudl bench inference`` at 2048^3 swung between 0.46x and
# 1.40x FP16 while the CUDA-graph column held still. So once a call has gone the long way, the
# launch it made is kept under the call's *signature* (dtypes, shapes, strides and devices of the
# operands; which of scale_a, scale_b, bias are given, as FP32 vectors, their lengths; out_dtype),
# and a later call with the same signature and 16-byte aligned tensors skips straight to it. Python
# numbers as scales are not kept: each call would copy them to the GPU anyway.
_PLANS: dict[tuple, Any] = {}


def _signature(a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, out_dtype: Any) -> tuple | None:
    import torch

    if type(a) is not torch.Tensor or type(b) is not torch.Tensor:
        return None
    sig = [a.dtype, b.dtype, a.shape, b.shape, a.stride(), b.stride(), a.device, b.device, out_dtype]
    extra = (scale_a, scale_b, bias)
    if any(v is not None for v in extra):
        if scale_a is None or scale_b is None:
            return None                 # the missing scale would be a new tensor each call
        for v in extra:
            if v is None:
                sig.append(None)
            elif (type(v) is torch.Tensor and v.dtype == torch.float32 and v.ndim == 1 and v.stride() == (1,)
                  and v.device == a.device):
                sig.append(v.shape[0])
            else:
                return None
    return tuple(sig)


def _lean(a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, out_dtype: Any) -> Any:
    """The product through a kept launch, or None when there is none for this call."""
    plan = _PLANS.get(_signature(a, b, scale_a, scale_b, bias, out_dtype)) if _PLANS else None
    if plan is None or not aligned(a, b, scale_a, scale_b, bias):
        return None
    import torch

    scaled = scale_a is not None
    out = torch.empty((a.shape[0], b.shape[1]), dtype=(out_dtype or torch.float32) if scaled else torch.int32,
                      device=a.device)
    pointers = (scale_a, scale_b, scale_a if bias is None else bias) if scaled else (out, out, out)
    return out if run_kept(_PLANS, plan, a, b, out, *pointers) else None


def _keep(sig: tuple | None, cfg: Int8Config, a: Any, b: Any, out: Any, sa: Any, sb: Any, bias: Any) -> None:
    """Keep the launch of ``cfg`` that a call of signature ``sig`` just made, for ``_lean``."""
    if sig is None or not aligned(a, b, out, sa, sb, bias):
        return
    relauncher, grid, args, _, tag = _call(cfg, a, b, out, sa, sb, bias)
    keep_launch(_PLANS, sig, relauncher, grid, args, tag, 6, cfg.tma)


@reference
def int8_matmul_triton(a: Any, b: Any, *, scale_a: Any = None, scale_b: Any = None, bias: Any = None,
                       out_dtype: Any = None, config: Int8Config | None = None) -> Any:
    """``a @ b`` for int8 torch matrices a (M, K) and b (K, N) on INT8 tensor cores, summed in INT32.

    Without scales or bias the result is the INT32 sums (M, N), equal to exact integer
    arithmetic (while no sum leaves INT32: K <= 133,000 products of +-127). With them it is
    ``sums * scale_a[m] * scale_b[n] + bias[n]`` (M, N), computed in FP32 in the epilogue and
    stored as ``out_dtype`` (FP32 by default; FP16 or BF16 for the next layer of a network that
    runs in 16 bits, which also halves the bytes the epilogue writes): ``scale_a`` one number or
    M (per tensor, or per row of a), ``scale_b`` one number or N (per tensor, or per column of b:
    an output channel), a missing scale 1, ``bias`` N numbers.

    On a GPU a is made row-major and b column-major (both K-major: what the INT8 MMA reads; a
    copy only when they are not: store a weight W (N, K) row-major and pass ``W.T``), and the
    configuration autotuned over ``INT8_CONFIGS`` once per shape (``SMALL_CONFIG`` below
    ``SMALL_OPS``); in Triton's interpreter any strides are read as they are, with
    ``INT8_INTERPRETER_CONFIG``. ``config`` fixes the tiles.
    """
    if config is None:
        fast = _lean(a, b, scale_a, scale_b, bias, out_dtype)
        if fast is not None:
            return fast
    import torch

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        raise TypeError(f"int8_matmul_triton takes torch tensors, got {type(a).__name__} and {type(b).__name__}")
    if a.dtype != torch.int8 or b.dtype != torch.int8:
        raise TypeError(f"int8_matmul_triton takes int8 tensors, got {a.dtype} and {b.dtype}")
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"expected two matrices, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.device != b.device:
        raise ValueError(f"a is on {a.device}, b on {b.device}")
    check_runnable(a)
    interpreted = interpreting()
    M, K = a.shape
    N = b.shape[1]
    if max(M * K, K * N, M * N) >= 2 ** 31:
        raise ValueError(f"({M}, {K}) @ ({K}, {N}): the kernel's offsets are 32-bit, so each matrix must hold fewer "
                         "than 2^31 elements; split the product")
    scaled = scale_a is not None or scale_b is not None or bias is not None
    sa = _scale_vector(1.0 if scale_a is None else scale_a, M, a.device, "scale_a") if scaled else None
    sb = _scale_vector(1.0 if scale_b is None else scale_b, N, a.device, "scale_b") if scaled else None
    if bias is not None:
        bias = torch.as_tensor(bias, dtype=torch.float32, device=a.device).reshape(-1).contiguous()
        if bias.numel() != N:
            raise ValueError(f"bias must have N = {N} numbers, got {bias.numel()}")
    if out_dtype is not None and not scaled:
        raise ValueError("out_dtype applies to the scaled result; the sums alone are INT32 (give scale_a, scale_b "
                         "or bias)")
    if out_dtype not in (None, torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"out_dtype must be torch.float32, float16 or bfloat16, got {out_dtype}")
    out = torch.empty((M, N), dtype=(out_dtype or torch.float32) if scaled else torch.int32, device=a.device)
    if M == 0 or N == 0:
        return out
    if K == 0:
        out.zero_()
        return (out + bias).to(out.dtype) if bias is not None else out
    sig = None
    if not interpreted:
        if config is None and a.stride(1) == 1 and b.stride(0) == 1:
            sig = _signature(a, b, scale_a, scale_b, bias, out_dtype)      # no copies: the launch can be kept
        if a.stride(1) != 1:
            a = a.contiguous()                  # rows of A along K
        if b.stride(0) != 1:
            b = b.t().contiguous().t()          # B column-major: the K-major layout the INT8 MMA reads
    if config is None and not interpreted:
        if 2 * M * N * K >= SMALL_OPS:
            cfg = _autotuned.run(a, b, out, sa, sb, bias)
        else:
            cfg = SMALL_CONFIG
            _launch(cfg, a, b, out, sa, sb, bias)
        _keep(sig, cfg, a, b, out, sa, sb, bias)
        return out
    cfg = config or INT8_INTERPRETER_CONFIG
    if cfg.tma and not _tma_ok(a, b):
        raise ValueError(f"{cfg.label} needs int8_matmul_kernel_tma's conditions: a GPU of compute capability 9.0+, "
                         "K and the row strides multiples of 16, 16-byte aligned bases")
    _launch(cfg, a, b, out, sa, sb, bias)
    return out


def best_int8_config(M: int, N: int, K: int, out_dtype: Any = None) -> Int8Config | None:
    """The configuration the autotuner chose for (M, N, K) on this GPU (its latest), if it has run;
    ``out_dtype`` (torch.int32 for the sums, or the scaled result's dtype) picks among epilogues."""
    found = None
    for key, cfg in _autotuned.cache.items():
        if tuple(key[:3]) == (M, N, K) and out_dtype in (None, key[7]):
            found = cfg
    return found


__all__ = ["int8_matmul_kernel", "int8_matmul_kernel_tma", "Int8Config", "INT8_CONFIGS", "INT8_INTERPRETER_CONFIG",
           "SMALL_OPS", "SMALL_CONFIG", "int8_matmul_triton", "best_int8_config"]
