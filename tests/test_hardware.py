"""gpudl.hardware: the recorded peaks reproduce the lectures' and datasheets' figures and are the
products of their GPUs' units (lab01's answer, ``gpudl_instructor.references.lab01``)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from gpudl import hardware
from gpudl.hardware import PEAKS, SPECS, peak_bandwidth, peak_flops
from gpudl_instructor.references import lab01


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


def test_the_recorded_peaks_are_the_units_derivation_exactly():
    """PEAKS holds a figure for each rate of each GPU, and it is what lab01's reference derives."""
    assert set(PEAKS) == set(SPECS)
    for name, spec in SPECS.items():
        assert set(PEAKS[name]) == {"cuda", "tensor"}
        assert set(PEAKS[name]["cuda"]) == set(spec.cuda_fma_per_sm)
        assert set(PEAKS[name]["tensor"]) == set(spec.tensor_fma_per_sm)
        for dt in spec.cuda_fma_per_sm:
            assert peak_flops(spec, dt, tensor_cores=False) == lab01.peak_from_spec(spec, dt, tensor_cores=False)
        for dt in spec.tensor_fma_per_sm:
            assert peak_flops(spec, dt) == lab01.peak_from_spec(spec, dt)
            if spec.sparsity:
                assert peak_flops(spec, dt, sparse=True) == lab01.peak_from_spec(spec, dt, sparse=True)


def test_peaks_are_data_of_real_gpus_not_a_formula_of_any_units():
    """A GPU with made-up units has no peak here, even under a real GPU's name (that is lab01's exercise)."""
    made_up = dataclasses.replace(SPECS["A100"], name="made up", sms=7, boost_clock_mhz=1000)
    with pytest.raises(ValueError, match="no recorded peaks"):
        peak_flops(made_up, "fp32")
    renamed_units = dataclasses.replace(SPECS["A100"], sms=7)
    with pytest.raises(ValueError, match="no recorded peaks"):
        peak_flops(renamed_units, "fp16")
    assert "made up" in made_up.summary() and "TFLOP/s" in made_up.summary()      # no peaks listed, no error
    from gpudl.grading import wire
    assert peak_flops(wire.roundtrip(SPECS["H100-SXM"]), "bf16") == peak_flops("H100-SXM", "bf16")   # a copy is fine


class _Props:
    def __init__(self, name, sms, cc=(9, 0)):
        self.name, self.multi_processor_count, (self.major, self.minor) = name, sms, cc
        self.total_memory, self.L2_cache_size = 80 * 2**30, 50 * 2**20


@pytest.mark.parametrize("props, fp32_tflops, bf16_tflops", [
    (_Props("NVIDIA H100 80GB HBM3", 132), 66.9, 989.4),                 # the very spec of SPECS
    (_Props("NVIDIA H100 80GB HBM3", 66), 33.5, 494.7),                  # a cut-down variant: half the SMs
    (_Props("NVIDIA Future GPU", 100, (9, 0)), 100 * 128 * 2 * 1.5e-3, 100 * 2048 * 2 * 1.5e-3),  # estimated, 1500 MHz
])
def test_detect_gives_peaks_for_the_gpu_torch_sees(monkeypatch, props, fp32_tflops, bf16_tflops):
    monkeypatch.setattr(hardware, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setattr(hardware, "nvidia_smi", lambda query: None)
    spec = hardware.detect()
    assert spec.sms == props.multi_processor_count
    assert peak_flops(spec, "fp32") / 1e12 == pytest.approx(fp32_tflops, abs=0.06)
    assert peak_flops(spec, "bf16") / 1e12 == pytest.approx(bf16_tflops, abs=0.06)


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
    assert lab01.peak_from_units(80, 512, 1.53e9) == pytest.approx(125.3e12, rel=1e-3)   # the V100's tensor cores
    assert not hasattr(hardware, "peak_from_units")                                     # lab01's answer, not a tool
    assert hardware.bytes_per_element("half") == 2 and hardware.bytes_per_element(torch.bfloat16) == 2
    assert hardware.bytes_per_element("int4") == 0.5
