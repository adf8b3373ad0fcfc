"""GEMM, from the three-loop definition to a tuned Triton kernel, and the traffic blocking saves.

``C = A @ B`` with ``A`` (M, K) and ``B`` (K, N) is ``M N K`` fused multiply-adds, ``2 M N K``
FLOPs. Its data is only ``M K + K N + M N`` words: Level 3 BLAS does O(n) FLOPs per word, so
it can be compute-bound, *if* each word fetched from slow memory is reused many times while
it sits in fast memory. That reuse is what blocking buys (the lecture "It's about Block matrix
access"): with ``N`` blocks per side of an ``n x n`` matrix (tiles of ``b = n / N``),

    m = (2N + 2) n^2 words moved,   q = f / m = 2 n^3 / ((2N + 2) n^2) ~ n / N = b,

and three ``b x b`` tiles must fit in the fast memory of ``M`` words: ``b <= sqrt(M / 3)``.
Lab 03 has you write the loop orders, the blocked GEMM, that model, the tiled Triton kernel and
the batched GEMM; this package holds what they are measured and checked against.

The package, one module per idea, in reading order:

``gemm.loops``          ``LOOP_ORDERS`` (the six nestings of the triple loop), ``gemm_outer``
                        (accumulated outer products, the lecture)
``gemm.traffic``        ``naive_traffic`` (the unblocked loop's words); ``Trace``, ``loop_trace``,
                        ``blocked_trace`` (the memory accesses of a loop nest); ``CacheStats``,
                        ``simulate_traffic`` (an LRU cache that counts the words a trace moves);
                        ``lru_capacity_for_block``, ``traffic_table`` (simulated words per block,
                        next to a model you pass); ``cpu_cache_bytes`` (this CPU's caches)
``gemm.batched``        ``gemm_batched_loop``, ``gemm_batched``: many small GEMMs, one library call
                        each, or one batched call
``gemm.triton_kernel``  ``matmul_kernel_persistent``, ``matmul_kernel_tma``, ``TritonConfig``,
                        ``TRITON_CONFIGS``, ``INTERPRETER_CONFIG``, ``matmul_triton``,
                        ``best_triton_config``: persistent Triton GEMMs (any strides; TMA on
                        Hopper), autotuned on a GPU, run by the interpreter on a CPU;
                        ``triton_vs_torch``, ``triton_block_sweep``: their TFLOP/s next to
                        torch.matmul, on a GPU
``gemm.int8``           ``int8_matmul_kernel``, ``int8_matmul_kernel_tma``, ``Int8Config``,
                        ``INT8_CONFIGS``, ``INT8_INTERPRETER_CONFIG``, ``int8_matmul_triton``,
                        ``best_int8_config``: INT8 x INT8 -> INT32 on tensor cores, B read
                        K-major (column-major), the quantized layer's scales in the epilogue

Every public name is re-exported here (``from gpudl import gemm; gemm.simulate_traffic(...)``).
``gpudl bench gemm`` is ``gpudl.benchmarks.gemm``.
"""
from __future__ import annotations

from .batched import gemm_batched, gemm_batched_loop
from .loops import LOOP_ORDERS, gemm_outer
from .traffic import (CacheStats, Trace, blocked_trace, cpu_cache_bytes, loop_trace, lru_capacity_for_block,
                      naive_traffic, simulate_traffic, traffic_table)
from .triton_kernel import (INTERPRETER_CONFIG, TRITON_CONFIGS, TritonConfig, best_triton_config,
                            matmul_kernel_persistent, matmul_kernel_tma, matmul_triton, triton_block_sweep,
                            triton_vs_torch)
from .triton_kernel import _autotuned  # noqa: F401 - lab03's guard blocks the autotuned kernel too
from .int8 import (INT8_CONFIGS, INT8_INTERPRETER_CONFIG, Int8Config, best_int8_config, int8_matmul_kernel,
                   int8_matmul_kernel_tma, int8_matmul_triton)

__all__ = ["LOOP_ORDERS", "gemm_outer", "naive_traffic", "Trace", "loop_trace", "blocked_trace",
           "CacheStats", "simulate_traffic", "lru_capacity_for_block", "traffic_table", "cpu_cache_bytes",
           "gemm_batched_loop", "gemm_batched", "matmul_kernel_persistent", "matmul_kernel_tma",
           "TritonConfig", "TRITON_CONFIGS", "INTERPRETER_CONFIG", "matmul_triton", "best_triton_config",
           "triton_vs_torch", "triton_block_sweep", "int8_matmul_kernel", "int8_matmul_kernel_tma", "Int8Config",
           "INT8_CONFIGS", "INT8_INTERPRETER_CONFIG", "int8_matmul_triton", "best_int8_config"]
