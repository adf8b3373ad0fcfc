"""GEMM, from the three-loop definition to a tiled Triton kernel, and the traffic blocking saves.

``C = A @ B`` with ``A`` (M, K) and ``B`` (K, N) is ``M N K`` fused multiply-adds, ``2 M N K``
FLOPs. Its data is only ``M K + K N + M N`` words: Level 3 BLAS does O(n) FLOPs per word, so
it can be compute-bound, *if* each word fetched from slow memory is reused many times while
it sits in fast memory. That reuse is what blocking buys (the lecture "It's about Block matrix
access"): with ``N`` blocks per side of an ``n x n`` matrix (tiles of ``b = n / N``),

    m = (2N + 2) n^2 words moved,   q = f / m = 2 n^3 / ((2N + 2) n^2) ~ n / N = b,

and three ``b x b`` tiles must fit in the fast memory of ``M`` words: ``b <= sqrt(M / 3)``.

The package, one module per idea, in reading order:

``gemm.loops``          ``gemm_reference`` (the definition: three loops, a dot product per
                        entry), ``LOOP_ORDERS``, ``gemm_loops`` (the triple loop in each of its
                        six orders), ``gemm_outer`` (accumulated outer products, the lecture),
                        ``gemm_blocked`` (block matrix access: products of tiles)
``gemm.traffic``        ``naive_traffic``, ``blocked_traffic``, ``computational_intensity``,
                        ``optimal_block`` (the traffic model of the lecture); ``Trace``,
                        ``loop_trace``, ``blocked_trace`` (the memory accesses of a loop nest);
                        ``CacheStats``, ``simulate_traffic`` (an LRU cache that counts the words a
                        trace moves); ``lru_capacity_for_block``, ``traffic_table`` (simulated vs
                        modelled); ``cpu_cache_bytes`` (this CPU's caches, to choose a block)
``gemm.batched``        ``gemm_batched_loop``, ``gemm_batched``, ``gemm_batched_outer``: many small
                        GEMMs, one call each, one batched call, and written out
``gemm.triton_kernel``  ``matmul_kernel``, ``matmul_kernel_tma``, ``TritonConfig``, ``TRITON_CONFIGS``,
                        ``INTERPRETER_CONFIG``, ``matmul_triton``, ``best_triton_config``: the tiled
                        Triton kernel (Triton tutorial 03: tiles, masks, strides, grouped launch
                        order, FP32 accumulation) and its persistent TMA form for Hopper, autotuned
                        on a GPU, run by the interpreter on a CPU; ``triton_vs_torch``,
                        ``triton_block_sweep``: its TFLOP/s next to torch.matmul, on a GPU

Every public name is re-exported here (``from gpudl import gemm; gemm.gemm_blocked(...)``), and
``gemm_flops`` (2 M N K, ``gpudl.bench``'s). ``gpudl bench gemm`` is ``gpudl.benchmarks.gemm``.
"""
from __future__ import annotations

from ..bench import gemm_flops
from .batched import gemm_batched, gemm_batched_loop, gemm_batched_outer
from .loops import LOOP_ORDERS, gemm_blocked, gemm_loops, gemm_outer, gemm_reference
from .traffic import (CacheStats, Trace, blocked_trace, blocked_traffic, computational_intensity, cpu_cache_bytes,
                      loop_trace, lru_capacity_for_block, naive_traffic, optimal_block, simulate_traffic,
                      traffic_table)
from .triton_kernel import (INTERPRETER_CONFIG, TRITON_CONFIGS, TritonConfig, best_triton_config, matmul_kernel,
                            matmul_kernel_tma, matmul_triton, triton_block_sweep, triton_vs_torch)
from .triton_kernel import _autotuned  # noqa: F401 - lab03's guard blocks the autotuned kernel too

__all__ = ["gemm_flops", "gemm_reference", "LOOP_ORDERS", "gemm_loops", "gemm_outer", "gemm_blocked",
           "naive_traffic", "blocked_traffic", "computational_intensity", "optimal_block", "Trace", "loop_trace",
           "blocked_trace", "CacheStats", "simulate_traffic", "lru_capacity_for_block", "traffic_table",
           "cpu_cache_bytes", "gemm_batched_loop", "gemm_batched", "gemm_batched_outer", "matmul_kernel",
           "matmul_kernel_tma",
           "TritonConfig", "TRITON_CONFIGS", "INTERPRETER_CONFIG", "matmul_triton", "best_triton_config",
           "triton_vs_torch", "triton_block_sweep"]
