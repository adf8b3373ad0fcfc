"""gpudl.fusion: the fused Triton kernel equals the eager chain; bytes, roofline prediction; BN folding."""
from __future__ import annotations

import pytest
import torch

from gpudl import fusion as F
from gpudl_instructor.references import lab09 as ref      # lab 09's answers, kept by the instructor
from gpudl.grading import assert_close
from gpudl.hardware import peak_bandwidth, peak_flops

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"


def _chain(rows, cols, dtype, device=DEVICE, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, r = (torch.randn(rows, cols, generator=g).to(device, dtype) for _ in range(2))
    return x, torch.randn(cols, generator=g).to(device, dtype), r


@pytest.mark.parametrize("rows, cols", [(1, 1), (7, 13), (64, 96), (3, 5000)])   # not multiples of the block
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_fused_kernel_equals_the_eager_chain(rows, cols, dtype):
    x, b, r = _chain(rows, cols, dtype)
    want = torch.nn.functional.gelu(x.double() + b.double()) + r.double()       # the chain in float64
    got = F.bias_gelu_residual_triton(x, b, r)
    assert got.dtype == dtype and got.shape == x.shape
    assert_close(got, want, dtype="fp16" if dtype == torch.float16 else "fp32", k=4)
    assert_close(F.bias_gelu_residual(x, b, r), want, dtype="fp16" if dtype == torch.float16 else "fp32", k=4)


def test_fused_kernel_checks_its_inputs():
    x, b, r = _chain(4, 6, torch.float32)
    with pytest.raises(ValueError, match="bias"):
        F.bias_gelu_residual_triton(x, b[:5], r)
    with pytest.raises(ValueError, match="residual"):
        F.bias_gelu_residual_triton(x, b, r[:3])
    with pytest.raises(TypeError, match="dtype"):
        F.bias_gelu_residual_triton(x, b.double(), r)


@pytest.mark.parametrize("dtype, size", [("fp16", 2), ("fp32", 4)])
def test_chain_bytes_are_the_ops_bytes(dtype, size):
    rows, cols = 96, 40
    ops, fused = F.chain_ops(rows, cols, dtype), F.fused_op(rows, cols, dtype)
    unfused_b, fused_b = ref.chain_bytes(rows, cols, size)
    assert unfused_b == sum(op.bytes for op in ops) == (7 * rows * cols + cols) * size
    assert fused_b == fused.bytes == (3 * rows * cols + cols) * size
    assert fused.flops == sum(op.flops for op in ops) == rows * cols * (2 + F.GELU_FLOPS)
    from gpudl_instructor.references.lab01 import bound      # lab01's answer
    assert all(bound(op.flops, op.bytes, "H100-SXM", dtype) == "memory" for op in ops + [fused])


def test_predicted_speedup_is_the_byte_ratio_when_every_kernel_is_memory_bound():
    peak, bw = peak_flops("H100-SXM", "fp16", tensor_cores=False), peak_bandwidth("H100-SXM")
    rows = cols = 8192
    want = (7 * rows * cols + cols) / (3 * rows * cols + cols)
    assert ref.predicted_speedup(F.chain_ops(rows, cols), F.fused_op(rows, cols), peak, bw) == pytest.approx(want)
    assert want == pytest.approx(7 / 3, rel=1e-3)


def test_predicted_speedup_uses_the_roofline_not_the_bytes_for_compute_bound_kernels():
    peak, bw = 100.0, 10.0                           # ridge at 10 FLOP/byte
    gemm, epilogue = (1000.0, 20.0), (10.0, 40.0)    # compute-bound GEMM (10 s), memory-bound epilogue (4 s)
    fused = (1010.0, 20.0)                           # the epilogue in the GEMM: still 10.1 s of math
    assert ref.roofline_time(*gemm, peak, bw) == 10.0 and ref.roofline_time(*epilogue, peak, bw) == 4.0
    assert ref.predicted_speedup([gemm, epilogue], fused, peak, bw) == pytest.approx(14.0 / 10.1)
    with pytest.raises(ValueError):
        ref.roofline_time(1, 1, 0, 1)


@pytest.mark.parametrize("bias, groups", [(True, 1), (False, 1), (True, 2)])
def test_folding_bn_equals_conv_then_bn_and_torchs_fuse_conv_bn_eval(bias, groups):
    g = torch.Generator().manual_seed(1)
    conv = torch.nn.Conv2d(4, 6, 3, padding=1, bias=bias, groups=groups).double().eval()
    bn = torch.nn.BatchNorm2d(6, eps=1e-3).double().eval()
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(6, generator=g, dtype=torch.float64))
        bn.running_var.copy_(torch.rand(6, generator=g, dtype=torch.float64) + 0.1)
        bn.weight.copy_(torch.randn(6, generator=g, dtype=torch.float64))
        bn.bias.copy_(torch.randn(6, generator=g, dtype=torch.float64))
    folded = F.fold_conv_bn_module(conv, bn)                        # torch's fuse_conv_bn_eval
    torchs = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    w, b = ref.fold_conv_bn(conv.weight.detach(), None if conv.bias is None else conv.bias.detach(), bn.running_mean,
                            bn.running_var, bn.weight.detach(), bn.bias.detach(), bn.eps)    # lab 09's answer
    assert_close(w, torchs.weight.detach(), dtype="fp64")
    assert_close(b, torchs.bias.detach(), dtype="fp64")
    x = torch.randn(2, 4, 7, 5, generator=g, dtype=torch.float64)
    with torch.no_grad():
        assert_close(folded(x), bn(conv(x)), dtype="fp64", k=36)


def test_folding_needs_eval_mode_and_uses_eps():
    conv, bn = torch.nn.Conv2d(2, 3, 1), torch.nn.BatchNorm2d(3, eps=0.5)
    with pytest.raises(ValueError, match="eval"):
        F.fold_conv_bn_module(conv, bn)
    w, b = ref.fold_conv_bn(torch.ones(3, 2, 1, 1), None, torch.zeros(3), torch.zeros(3), torch.ones(3), torch.zeros(3),
                          eps=0.25)
    assert torch.allclose(w, torch.full((3, 2, 1, 1), 2.0)) and torch.equal(b, torch.zeros(3))   # 1 / sqrt(0 + 0.25)


def test_compile_status_says_why_without_a_cpp_compiler(monkeypatch):
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(F.shutil, "which", lambda name: None)
    assert F.cxx_compiler() is None
    ok, why = F.compile_status("cpu")
    assert not ok and "C++ compiler" in why
    with pytest.raises(RuntimeError, match="C\\+\\+ compiler"):
        F.compiled_chain("cpu")
    assert F.compile_status("cuda")[0]


@pytest.mark.slow
@pytest.mark.skipif(not F.compile_status(DEVICE)[0], reason=F.compile_status(DEVICE)[1])
def test_torch_compile_fuses_the_chain_to_the_same_values():
    x, b, r = _chain(32, 48, torch.float32)
    assert_close(F.compiled_chain(DEVICE)(x, b, r), F.bias_gelu_residual(x, b, r), dtype="fp32", k=4)


def test_measure_fusion_reports_the_prediction_and_what_ran():
    # On the CPU, Triton's interpreter runs the kernel; on a GPU machine, the GPU does (its CPU has no interpreter set).
    res = F.measure_fusion(16, 256, "fp32", "cuda" if CUDA else "cpu", compile=False, budget_s=0.05)
    assert res.predicted == pytest.approx((7 * 16 * 256 + 256) / (3 * 16 * 256 + 256))
    assert res.unfused_s > 0 and res.fused_s > 0 and res.compiled_s is None
    assert res.measured == pytest.approx(res.unfused_s / res.fused_s)
    assert "interpreter" in res.note or CUDA


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fused_kernel_on_the_gpu_in_16_bits(dtype):
    x, b, r = _chain(1024, 4096 + 3, dtype, "cuda")
    want = torch.nn.functional.gelu(x.double() + b.double()) + r.double()
    assert_close(F.bias_gelu_residual_triton(x, b, r), want, dtype="bf16" if dtype == torch.bfloat16 else "fp16", k=4)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_torch_compile_makes_one_kernel_of_the_chain_on_the_gpu():
    from gpudl import profiling

    x, b, r = _chain(256, 1024, torch.float16, "cuda")
    fn = F.compiled_chain("cuda")
    events = profiling.profile_events(lambda: fn(x, b, r), device="cuda", warmup=2)
    eager = profiling.profile_events(lambda: F.bias_gelu_residual(x, b, r), device="cuda")
    assert len(eager) == 3 and len(events) == 1, [e["name"] for e in events]


@pytest.mark.skipif(CUDA, reason="doctor reports the C++ compiler on a CPU-only machine")
def test_doctor_reports_the_cpp_compiler_torch_compile_needs(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    def doctor(path):
        env = {k: v for k, v in os.environ.items() if k != "CXX"}
        env["PATH"] = path
        out = subprocess.run([sys.executable, "-m", "gpudl", "doctor"], capture_output=True, text=True, env=env,
                             timeout=300).stdout
        return next(line for line in out.splitlines() if line.startswith("c++"))

    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python").symlink_to(sys.executable)
    assert "MISSING" in doctor(str(shim)) and "skipped" in doctor(str(shim))
    if F.cxx_compiler():
        assert F.cxx_compiler() in doctor(os.environ["PATH"])
