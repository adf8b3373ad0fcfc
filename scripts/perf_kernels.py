"""Candidate kernels for the issue-17 sweep (scripts/perf_sweep.py): not part of the package.

Whatever wins here moves into src/gpudl; the rest stays a record of what was tried.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

_ALLOCATOR_SET = False


def ensure_allocator() -> None:
    """Device-side tensor descriptors (tl.make_tensor_descriptor) need global scratch memory."""
    global _ALLOCATOR_SET
    if not _ALLOCATOR_SET:
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))
        _ALLOCATOR_SET = True


# --- GEMM: persistent, TMA descriptors, grouped tile order ------------------------------------------

@triton.jit
def _tile_of(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _persistent_tile(tile_id, tile_id_c, a_desc, b_desc, c_desc, num_pid_in_group, num_pid_m, k_tiles,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                     EPILOGUE_SUBTILE: tl.constexpr, dtype: tl.constexpr):
    pid_m, pid_n = _tile_of(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
    offs_am = pid_m * BLOCK_M
    offs_bn = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(k_tiles):
        a = a_desc.load([offs_am, ki * BLOCK_K])
        b = b_desc.load([ki * BLOCK_K, offs_bn])
        acc = tl.dot(a, b, acc)
    pid_m, pid_n = _tile_of(tile_id_c, num_pid_in_group, num_pid_m, GROUP_M)
    offs_cm = pid_m * BLOCK_M
    offs_cn = pid_n * BLOCK_N
    if EPILOGUE_SUBTILE:
        acc = tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2))
        acc = tl.permute(acc, (0, 2, 1))
        acc0, acc1 = tl.split(acc)
        c_desc.store([offs_cm, offs_cn], acc0.to(dtype))
        c_desc.store([offs_cm, offs_cn + BLOCK_N // 2], acc1.to(dtype))
    else:
        c_desc.store([offs_cm, offs_cn], acc.to(dtype))


@triton.jit
def matmul_tma_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                          LOOP: tl.constexpr):
    """LOOP 0: a plain persistent loop; 1: flatten=True; 2: flatten and warp_specialize."""
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    if EPILOGUE_SUBTILE:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                           block_shape=[BLOCK_M, BLOCK_N // 2])
    else:
        c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                           block_shape=[BLOCK_M, BLOCK_N])
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_M * num_pid_n
    if LOOP == 2:
        for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=True):
            tile_id_c += NUM_SMS
            _persistent_tile(tile_id, tile_id_c, a_desc, b_desc, c_desc, num_pid_in_group, num_pid_m, k_tiles,
                             BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EPILOGUE_SUBTILE, dtype)
    elif LOOP == 1:
        for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
            tile_id_c += NUM_SMS
            _persistent_tile(tile_id, tile_id_c, a_desc, b_desc, c_desc, num_pid_in_group, num_pid_m, k_tiles,
                             BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EPILOGUE_SUBTILE, dtype)
    else:
        for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
            tile_id_c += NUM_SMS
            _persistent_tile(tile_id, tile_id_c, a_desc, b_desc, c_desc, num_pid_in_group, num_pid_m, k_tiles,
                             BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EPILOGUE_SUBTILE, dtype)


@triton.jit
def matmul_tma(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """One program per tile (not persistent), TMA loads and store."""
    dtype = c_ptr.dtype.element_ty
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = _tile_of(pid, GROUP_M * num_pid_n, num_pid_m, GROUP_M)
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([pid_m * BLOCK_M, ki * BLOCK_K])
        b = b_desc.load([ki * BLOCK_K, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(dtype))


def num_sms() -> int:
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def launch_tma_persistent(a, b, c, cfg):
    """cfg: dict BM, BN, BK, G, w, s, sub, ws."""
    ensure_allocator()
    M, K = a.shape
    N = b.shape[1]
    sms = num_sms()
    tiles = triton.cdiv(M, cfg["BM"]) * triton.cdiv(N, cfg["BN"])
    grid = (min(sms, tiles),)
    matmul_tma_persistent[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                                BLOCK_M=cfg["BM"], BLOCK_N=cfg["BN"], BLOCK_K=cfg["BK"], GROUP_M=cfg.get("G", 8),
                                NUM_SMS=sms, EPILOGUE_SUBTILE=cfg.get("sub", False),
                                LOOP=cfg.get("loop", 1), num_warps=cfg["w"], num_stages=cfg["s"])
    return c


def launch_tma(a, b, c, cfg):
    ensure_allocator()
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, cfg["BM"]) * triton.cdiv(N, cfg["BN"]),)
    matmul_tma[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0),
                     BLOCK_M=cfg["BM"], BLOCK_N=cfg["BN"], BLOCK_K=cfg["BK"], GROUP_M=cfg.get("G", 8),
                     num_warps=cfg["w"], num_stages=cfg["s"])
    return c


# --- attention: the tuned kernel's algorithm with TMA loads (2-D descriptors over (Z*L, d)) ---------

@triton.jit
def _attn_tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row_k, lo, hi, offs_m, offs_n, N_K, qk_scale,
                    BLOCK_N: tl.constexpr, DIAGONAL: tl.constexpr, EVEN_N: tl.constexpr):
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        k = desc_k.load([row_k + start_n, 0])
        qk = tl.dot(q, k.T)
        if DIAGONAL:
            keep = offs_m[:, None] >= cols[None, :]
            if not EVEN_N:
                keep = keep & (cols[None, :] < N_K)
            qk = tl.where(keep, qk * qk_scale, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            if not EVEN_N:
                qk = tl.where(cols[None, :] < N_K, qk, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = desc_v.load([row_k + start_n, 0])
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def attention_tma_kernel(Q, K, V, Out, Z, N_Q, N_K, qk_scale, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, REVERSE: tl.constexpr):
    """Q, K, V, Out contiguous (Z, L, HEAD_DIM); N_Q % BLOCK_M == 0 and N_K % BLOCK_N == 0 assumed."""
    if REVERSE:
        start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        start_m = tl.program_id(0)
    z = tl.program_id(1)
    desc_q = tl.make_tensor_descriptor(Q, shape=[Z * N_Q, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[Z * N_Q, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[Z * N_K, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[Z * N_K, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    row_q = z * N_Q + start_m * BLOCK_M
    row_k = z * N_K
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    q = desc_q.load([row_q, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        acc, l_i, m_i = _attn_tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row_k, 0, start_m * BLOCK_M,
                                        offs_m, offs_n, N_K, qk_scale, BLOCK_N, False, True)
        acc, l_i, m_i = _attn_tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row_k, start_m * BLOCK_M,
                                        (start_m + 1) * BLOCK_M, offs_m, offs_n, N_K, qk_scale, BLOCK_N, True, True)
    else:
        acc, l_i, m_i = _attn_tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row_k, 0, N_K,
                                        offs_m, offs_n, N_K, qk_scale, BLOCK_N, False, True)
    desc_o.store([row_q, 0], (acc / l_i[:, None]).to(Out.dtype.element_ty))


def launch_attention_tma(q, k, v, out, causal, cfg, scale):
    """q, k, v, out contiguous (Z, L, d)."""
    ensure_allocator()
    z, lq, d = q.shape
    lk = k.shape[1]
    grid = (triton.cdiv(lq, cfg["BM"]), z)
    attention_tma_kernel[grid](q, k, v, out, z, lq, lk, scale * 1.4426950408889634, HEAD_DIM=d, CAUSAL=causal,
                               BLOCK_M=cfg["BM"], BLOCK_N=cfg["BN"], REVERSE=cfg.get("rev", False),
                               num_warps=cfg["w"], num_stages=cfg["s"])
    return out
