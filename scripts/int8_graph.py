"""The INT8 rows at 2048^3 timed as CUDA graphs (no host time), beside plain events (developer's probe)."""
import sys
sys.path.insert(0, "src")
import torch, triton.testing
from gpudl import quantization as q
from gpudl.gemm import int8 as g8
for n in (2048, 4096):
    g = torch.Generator().manual_seed(n)
    a = torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8).cuda()
    b = q.column_major(torch.randint(-127, 128, (n, n), generator=g, dtype=torch.int8).cuda())
    ah, bh = a.half(), b.contiguous().half()
    sa, sb = torch.rand(n, device="cuda") / 1e3, torch.rand(n, device="cuda") / 1e3
    fns = {"fp16": lambda: torch.matmul(ah, bh), "intmm col": lambda: torch._int_mm(a, b),
           "triton": lambda: g8.int8_matmul_triton(a, b),
           "layer": lambda: g8.int8_matmul_triton(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.float16)}
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    res = {}
    for rnd in range(3):
        for name, f in fns.items():
            res.setdefault(name, []).append((triton.testing.do_bench_cudagraph(f, rep=100, return_mode="median"),
                                             triton.testing.do_bench(f, warmup=25, rep=100, return_mode="median")))
    fp = sorted(r[0] for r in res["fp16"])[1]
    for name, rs in res.items():
        gr, ev = sorted(r[0] for r in rs)[1], sorted(r[1] for r in rs)[1]
        print(f"{n}^3 {name:10s} graph {gr*1e3:7.1f} us ({fp/gr:.2f}x fp16)   events {ev*1e3:7.1f} us")
