"""gpudl.hardware: peaks derived from units reproduce the lectures' and datasheets' figures."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gpudl import hardware
from gpudl.hardware import SPECS, peak_bandwidth, peak_flops


@pytest.mark.parametrize("name, dtype, kwargs, tflops", [
    # seed 004: "80 SM x 1024 FP16 / C x 1.53 GHz = 125 TFLOPS"
    ("V100", "fp16", {}, 125.3),
    ("V100", "fp32", {}, 15.7),                 # seed 004 table: 15.7
    ("V100", "fp64", {}, 7.8),                  # seed 004 table: 7.8
    ("V100", "fp16", {"tensor_cores": False}, 31.3),   # seed 004 table: 31.4 (non-tensor FP16)
    # seed 004: "108 x 2048 x 1.4 = 310"; A100 table: 312 (1.41 GHz), TF32 156, FP32 19.5, FP64 9.7 / TC 19.5
    ("A100", "fp16", {}, 311.9), ("A100", "bf16", {}, 311.9), ("A100", "tf32", {}, 155.9),
    ("A100", "fp32", {}, 19.5), ("A100", "fp64", {"tensor_cores": False}, 9.7), ("A100", "fp64", {}, 19.5),
    ("A100", "fp16", {"sparse": True}, 623.7), ("A100", "int8", {}, 623.7),
    ("A100", "fp16", {"tensor_cores": False}, 78.0), ("A100", "bf16", {"tensor_cores": False}, 39.0),
    # H100 SXM datasheet: FP32 67, TF32 495 dense, FP16/BF16 989 dense, x2 sparse, FP8 1979
    ("H100-SXM", "fp32", {}, 66.9), ("H100-SXM", "tf32", {}, 494.7), ("H100-SXM", "bf16", {}, 989.4),
    ("H100-SXM", "fp16", {"sparse": True}, 1978.9), ("H100-SXM", "fp8", {}, 1978.9),
    ("H100-SXM", "fp64", {}, 66.9), ("H100-SXM", "fp64", {"tensor_cores": False}, 33.5),
    # H100 PCIe datasheet: FP32 51, TF32 378, BF16 756
    ("H100-PCIe", "fp32", {}, 51.2), ("H100-PCIe", "tf32", {}, 378.2), ("H100-PCIe", "bf16", {}, 756.4),
    ("H200", "bf16", {}, 989.4),
    ("P100", "fp32", {}, 10.6), ("P100", "fp16", {}, 21.2),   # seed 004 table
    ("T4", "fp16", {}, 65.1), ("T4", "fp32", {}, 8.1),       # T4 datasheet: 65, 8.1
    ("RTX3090", "fp32", {}, 35.6),                           # seed 004: ~35.6 FP32
])
def test_peaks_reproduce_published_figures(name, dtype, kwargs, tflops):
    assert peak_flops(name, dtype, **kwargs) / 1e12 == pytest.approx(tflops, abs=0.06)


def test_peak_is_units_times_fma_times_two_times_clock():
    for spec in SPECS.values():
        for dt, fma in spec.cuda_fma_per_sm.items():
            assert peak_flops(spec, dt, tensor_cores=False) == spec.sms * fma * 2 * spec.boost_clock_mhz * 1e6
        for dt, fma in spec.tensor_fma_per_sm.items():
            assert peak_flops(spec, dt) == pytest.approx(spec.sms * fma * 2 * spec.clock_hz(True, dt))


def test_required_specs_exist():
    assert {"V100", "A100", "H100-SXM", "H100-PCIe", "H200", "T4", "RTX3090"} <= set(SPECS)


def test_sparsity_doubles_and_is_refused_where_absent():
    assert peak_flops("A100", "tf32", sparse=True) == 2 * peak_flops("A100", "tf32")
    with pytest.raises(ValueError, match="no 2:4 structured sparsity"):
        peak_flops("V100", "fp16", sparse=True)
    with pytest.raises(ValueError, match="tensor cores"):
        peak_flops("A100", "fp32", sparse=True)


def test_fp32_never_runs_on_tensor_cores_but_tf32_does():
    assert peak_flops("A100", "fp32", tensor_cores=True) == peak_flops("A100", "fp32", tensor_cores=False)
    with pytest.raises(ValueError, match="TF32"):
        peak_flops("V100", "tf32")
    with pytest.raises(ValueError, match="TF32"):
        peak_flops("A100", "tf32", tensor_cores=False)


def test_bandwidth_and_ridge_point():
    assert peak_bandwidth("V100") == 900e9
    assert peak_bandwidth("H100-SXM") == 3.35e12
    assert hardware.ridge_point("V100", "fp16") == pytest.approx(125.3e12 / 900e9, rel=1e-3)


@pytest.mark.parametrize("spelling, canonical", [
    ("float16", "fp16"), ("half", "fp16"), ("FP16", "fp16"), (torch.float16, "fp16"), (np.float16, "fp16"),
    (np.dtype("float32"), "fp32"), (torch.bfloat16, "bf16"), ("double", "fp64"), ("tf32", "tf32"),
])
def test_normalize_dtype(spelling, canonical):
    assert hardware.normalize_dtype(spelling) == canonical


def test_bad_inputs_explain_themselves():
    with pytest.raises(ValueError, match="unknown dtype"):
        hardware.normalize_dtype("float13")
    with pytest.raises(KeyError, match="known:"):
        hardware.get_spec("K80")
    with pytest.raises(ValueError, match="SM count"):
        hardware.GPUSpec(name="x", architecture="x", compute_capability=(8, 0), sms=0, cuda_fma_per_sm={},
                         tensor_fma_per_sm={}, boost_clock_mhz=1000, memory_bandwidth_gbs=1, memory_gib=1,
                         l2_kib=1, smem_per_sm_kib=1, registers_per_sm_kib=1)


def test_specs_are_frozen():
    with pytest.raises(Exception):
        SPECS["A100"].sms = 1
    with pytest.raises(TypeError):
        SPECS["A100"].tensor_fma_per_sm["fp16"] = 1


def test_get_spec_is_lenient_about_spelling():
    assert hardware.get_spec("h100 sxm") is SPECS["H100-SXM"]
    assert hardware.get_spec("H100SXM") is SPECS["H100-SXM"]


def test_device_and_pick_follow_gpudl_device(monkeypatch):
    monkeypatch.setenv("GPUDL_DEVICE", "cpu")
    assert hardware.device() == "cpu"
    assert hardware.pick(cpu=1, cuda=2) == 1
    monkeypatch.setenv("GPUDL_DEVICE", "tpu")
    with pytest.raises(ValueError, match="GPUDL_DEVICE"):
        hardware.device()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_without_gpu_detect_is_none_and_triton_interprets():
    import os
    assert hardware.detect() is None
    assert os.environ.get("TRITON_INTERPRET") == "1"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_detect_describes_this_gpu():
    spec = hardware.detect()
    assert spec.sms == torch.cuda.get_device_properties(0).multi_processor_count
    assert peak_flops(spec, "fp32") > 1e12


def test_energy_table_from_the_seed():
    e = hardware.ENERGY_PJ
    assert e["fetch_two_int8_from_dram"] / e["int8_multiply"] == pytest.approx(640)
    assert math.isclose(e["fetch_two_int8_from_dram"] / e["fetch_two_int8_from_large_sram"], 64)


def test_peak_from_units_and_bytes_per_element():
    assert hardware.peak_from_units(80, 512, 1.53e9) == pytest.approx(125.3e12, rel=1e-3)   # the V100's tensor cores
    assert hardware.bytes_per_element("half") == 2 and hardware.bytes_per_element(torch.bfloat16) == 2
    assert hardware.bytes_per_element("int4") == 0.5
