"""GPU specifications, their peak throughput, and the current device.

A GPU is described by its units (SMs, fused multiply-adds per clock per SM, clocks) and its
peaks are the figures its datasheet quotes. The two agree the way the lectures derive a peak,

    peak FLOP/s = SMs x (fused multiply-adds per clock per SM) x 2 x clock,

because one FMA is two floating-point operations (the V100's tensor cores: 80 SMs x 1024 FLOP
x 1.53 GHz = 125 TFLOP/s). Deriving a peak from units is lab01's first exercise, so this module
keeps the peaks as data (``PEAKS``, one table per GPU of ``SPECS``), and the tests check that
every one of them is the product of its GPU's units.

Public names
------------
``GPUSpec``         a frozen description of one GPU (units per SM, clocks, memory system)
``SPECS``           the GPUs this course knows, by short name ("V100", "A100", "H100-SXM", ...)
``PEAKS``           their dense peaks in FLOP/s (OP/s for integers), by GPU, unit ("cuda", "tensor") and dtype
``get_spec``        a spec from a name or a spec
``normalize_dtype`` "float16", torch.float16, np.float16, "half" ... -> "fp16"
``bytes_per_element`` bytes of one element of a dtype in any spelling (int4: 0.5)
``peak_flops``      the peak of a GPU of ``SPECS`` (or the one torch sees) for a dtype, tensor cores or not, sparse or not
``peak_bandwidth``  DRAM bandwidth in bytes/s
``ridge_point``     the arithmetic intensity (FLOP/byte) where a roofline turns flat
``detect``          the spec of the GPU torch sees (estimated for GPUs not in ``SPECS``), or None
``device``          "cuda" or "cpu": what the labs run on (``GPUDL_DEVICE`` overrides)
``configure``       run once at import: Triton's interpreter when there is no GPU
``pick``            choose problem sizes for the current device
``nvidia_smi``      one field nvidia-smi reports for GPU 0 (driver, clocks), or None
``cuda_available``  whether torch sees a CUDA device, whatever ``GPUDL_DEVICE`` says
``ENERGY_PJ``       the energy of an operation vs moving its operands (Timeloop tutorial)
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Mapping

from .references import reference

# Canonical dtype names. "tf32" is a tensor-core *mode* for fp32 data, not a storage type.
DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")
BYTES_PER_ELEMENT = MappingProxyType(
    {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
)

def bytes_per_element(dtype: Any) -> float:
    """Bytes per element of ``dtype`` in any spelling ("half", torch.float16, ... -> 2; int4 -> 0.5)."""
    return BYTES_PER_ELEMENT[normalize_dtype(dtype)]


_ALIASES = {
    "float64": "fp64", "double": "fp64", "f64": "fp64",
    "float32": "fp32", "float": "fp32", "single": "fp32", "f32": "fp32",
    "tensorfloat32": "tf32", "tensorfloat-32": "tf32",
    "float16": "fp16", "half": "fp16", "f16": "fp16",
    "bfloat16": "bf16",
    "float8": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "int8": "int8", "uint8": "int8", "i8": "int8",
    "int4": "int4",
}

# Energy per operation, from the Timeloop tutorial quoted in the "Foundations of DL
# Hardware" lecture: computing is cheap, moving operands is not.
ENERGY_PJ = MappingProxyType({
    "int8_multiply": 0.2,
    "fetch_two_int8_from_dram": 128.0,
    "fetch_two_int8_from_large_sram": 2.0,
})


def normalize_dtype(dtype: Any) -> str:
    """Map any spelling of a dtype to one of ``DTYPES``.

    >>> normalize_dtype("float16"), normalize_dtype("BF16"), normalize_dtype("single")
    ('fp16', 'bf16', 'fp32')
    """
    if isinstance(dtype, str):
        key = dtype.strip().lower().replace("torch.", "").replace("numpy.", "")
    else:
        # torch.float16 -> "torch.float16"; np.float32 / np.dtype('float32') -> "float32"
        name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
        key = str(name).lower().replace("torch.", "")
    if key in DTYPES:
        return key
    if key in _ALIASES:
        return _ALIASES[key]
    raise ValueError(
        f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)} "
        "(or a torch/numpy dtype, or a name like 'float16')"
    )


@dataclass(frozen=True)
class GPUSpec:
    """One GPU, described by its units rather than by its marketing peaks.

    Units are per streaming multiprocessor (SM) and per clock. ``cuda_fma_per_sm`` holds
    the CUDA-core rates (FMA per clock per SM) by dtype; ``tensor_fma_per_sm`` the dense
    tensor-core rates with FP32 accumulation where a GPU offers a choice. NVIDIA quotes
    some GPUs' tensor-core peaks at a lower clock than their CUDA-core peaks; that clock
    is ``tensor_clock_mhz`` (``None``: the boost clock).
    """

    name: str
    architecture: str
    compute_capability: tuple[int, int]
    sms: int
    cuda_fma_per_sm: Mapping[str, int]
    tensor_fma_per_sm: Mapping[str, int]
    boost_clock_mhz: float
    memory_bandwidth_gbs: float
    memory_gib: float
    l2_kib: int
    smem_per_sm_kib: int
    registers_per_sm_kib: int
    tensor_clock_mhz: float | None = None
    sparsity: bool = False          # 2:4 structured sparsity doubles tensor-core rates
    estimated: bool = False         # True for a GPU not in SPECS, built from what torch reports
    source: str = ""

    def __post_init__(self) -> None:
        if self.sms <= 0:
            raise ValueError(f"{self.name}: SM count must be positive, got {self.sms}")
        if self.boost_clock_mhz <= 0:
            raise ValueError(f"{self.name}: boost clock must be positive, got {self.boost_clock_mhz}")
        for table in (self.cuda_fma_per_sm, self.tensor_fma_per_sm):
            for dt in table:
                if dt not in DTYPES:
                    raise ValueError(f"{self.name}: unknown dtype {dt!r} in a rate table")
        object.__setattr__(self, "cuda_fma_per_sm", MappingProxyType(dict(self.cuda_fma_per_sm)))
        object.__setattr__(self, "tensor_fma_per_sm", MappingProxyType(dict(self.tensor_fma_per_sm)))

    @property
    def fp32_units_per_sm(self) -> int:
        return self.cuda_fma_per_sm.get("fp32", 0)

    @property
    def fp64_units_per_sm(self) -> int:
        return self.cuda_fma_per_sm.get("fp64", 0)

    @property
    def has_tensor_cores(self) -> bool:
        return bool(self.tensor_fma_per_sm)

    def clock_hz(self, tensor: bool, dtype: str = "fp16") -> float:
        """The clock a peak is quoted at. NVIDIA quotes Hopper's FP64 tensor-core peak at the
        boost clock and its other tensor-core peaks at ``tensor_clock_mhz``."""
        slower = tensor and self.tensor_clock_mhz and dtype != "fp64"
        return (self.tensor_clock_mhz if slower else self.boost_clock_mhz) * 1e6

    def summary(self) -> str:
        """One line per fact, for `gpudl doctor` and reports."""
        peaks = []
        for dt in ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"):
            try:
                peaks.append(f"{dt} {peak_flops(self, dt) / 1e12:.1f}")
            except ValueError:
                pass
        est = " (estimated)" if self.estimated else ""
        return (
            f"{self.name}{est}: {self.architecture}, {self.sms} SMs, boost {self.boost_clock_mhz:.0f} MHz, "
            f"{self.memory_bandwidth_gbs:.0f} GB/s, L2 {self.l2_kib / 1024:.0f} MiB\n"
            "  dense peaks (TFLOP/s): " + ", ".join(peaks)
        )


def _spec(**kw: Any) -> GPUSpec:
    return GPUSpec(**kw)


# Every number below carries its source. "DNN lecture" is the LAPENNA "DNN computing on GPU"
# lecture (its P100/V100/A100 table reproduces NVIDIA's A100 whitepaper); "AI lecture" is the
# "Accelerating AI" lecture (its multiply-add-per-clock-per-SM table).
SPECS: Mapping[str, GPUSpec] = MappingProxyType({
    "P100": _spec(
        name="P100", architecture="Pascal", compute_capability=(6, 0),
        sms=56,                                           # DNN lecture table: 56 SMs
        cuda_fma_per_sm={"fp64": 32, "fp32": 64, "fp16": 128},  # 32 FP64 / 64 FP32 cores per SM; FP16 at 2x (21.2 TFLOP/s)
        tensor_fma_per_sm={},                             # no tensor cores
        boost_clock_mhz=1480,                             # DNN lecture table: GPU boost clock
        memory_bandwidth_gbs=720, memory_gib=16,          # DNN lecture table
        l2_kib=4096, smem_per_sm_kib=64, registers_per_sm_kib=256,  # DNN lecture table
        source="NVIDIA A100 whitepaper table as quoted in DNN lecture",
    ),
    "V100": _spec(
        name="V100", architecture="Volta", compute_capability=(7, 0),
        sms=80,                                           # DNN lecture: 80 SMs
        cuda_fma_per_sm={"fp64": 32, "fp32": 64, "fp16": 128},  # AI lecture MAC table (Volta); DNN lecture: 16 FP32 + 8 FP64 per sub-core x 4
        tensor_fma_per_sm={"fp16": 512},                  # AI/DNN lectures: 8 tensor cores x 64 FMA = 512 FMA/clk/SM
        boost_clock_mhz=1530,                             # DNN lecture: 80 x 1024 x 1.53 GHz = 125 TFLOP/s
        memory_bandwidth_gbs=900, memory_gib=32,          # DNN lecture: 900 GB/s HBM2
        l2_kib=6144, smem_per_sm_kib=96, registers_per_sm_kib=256,  # DNN lecture table
        source="NVIDIA Volta/A100 whitepapers as quoted in the AI and DNN lectures",
    ),
    "T4": _spec(
        name="T4", architecture="Turing", compute_capability=(7, 5),
        sms=40,                                           # NVIDIA Turing whitepaper, Tesla T4
        cuda_fma_per_sm={"fp64": 2, "fp32": 64, "fp16": 128},   # AI lecture MAC table (Turing)
        tensor_fma_per_sm={"fp16": 512, "int8": 1024, "int4": 2048},  # AI lecture MAC table (Turing)
        boost_clock_mhz=1590,                             # T4 datasheet: 65 FP16 TFLOP/s, 8.1 FP32 TFLOP/s
        memory_bandwidth_gbs=320, memory_gib=16,          # T4 datasheet: 320 GB/s GDDR6
        l2_kib=4096, smem_per_sm_kib=64, registers_per_sm_kib=256,  # Turing tuning guide
        source="NVIDIA T4 datasheet; Turing whitepaper; AI lecture",
    ),
    "A100": _spec(
        name="A100", architecture="Ampere", compute_capability=(8, 0),
        sms=108,                                          # DNN lecture: 108 SMs
        cuda_fma_per_sm={"fp64": 32, "fp32": 64, "fp16": 256, "bf16": 128},  # AI lecture MAC table; DNN lecture: FP16 78, BF16 39 TFLOP/s
        tensor_fma_per_sm={"fp64": 64, "tf32": 512, "fp16": 1024, "bf16": 1024,
                           "int8": 2048, "int4": 4096},   # AI lecture MAC table (Ampere A100)
        boost_clock_mhz=1410,                             # DNN lecture: 108 x 2048 x 1.41 GHz = 312 TFLOP/s
        memory_bandwidth_gbs=1555, memory_gib=40,         # DNN lecture: 1555 GB/s HBM2
        l2_kib=40960, smem_per_sm_kib=164, registers_per_sm_kib=256,  # DNN lecture table
        sparsity=True,                                    # DNN lecture: 624 TFLOP/s with sparsity
        source="NVIDIA A100 whitepaper as quoted in the AI and DNN lectures",
    ),
    "RTX3090": _spec(
        name="RTX3090", architecture="Ampere (GA102)", compute_capability=(8, 6),
        sms=82,                                           # GA102 whitepaper: RTX 3090 has 82 SMs, 10496 CUDA cores
        cuda_fma_per_sm={"fp64": 2, "fp32": 128, "fp16": 128},  # 128 FP32 per SM; DNN lecture: ~35.6 FP32 TFLOP/s
        # GeForce tensor cores run FP32-accumulate at half their FP16-accumulate rate; frameworks
        # accumulate in FP32, so these are the FP32-accumulate rates (FP16 71 TFLOP/s dense; the
        # lecture's "~142 TFLOP with Tensor core" is the FP16-accumulate figure).
        tensor_fma_per_sm={"tf32": 128, "fp16": 256, "bf16": 256, "int8": 1024},
        boost_clock_mhz=1695,                             # DNN lecture: 1.7 GHz boost; GA102 whitepaper 1695 MHz
        memory_bandwidth_gbs=936, memory_gib=24,          # GA102 whitepaper: 936 GB/s GDDR6X
        l2_kib=6144, smem_per_sm_kib=100, registers_per_sm_kib=256,  # GA102 whitepaper / tuning guide
        sparsity=True,
        source="NVIDIA GA102 whitepaper; DNN lecture CPU-vs-GPU table",
    ),
    "H100-SXM": _spec(
        name="H100-SXM", architecture="Hopper", compute_capability=(9, 0),
        sms=132,                                          # H100 whitepaper: 132 SMs on SXM5
        cuda_fma_per_sm={"fp64": 64, "fp32": 128, "fp16": 256, "bf16": 256},  # Foundations lecture Hopper SM diagram: 4 x 32 FP32, 4 x 16 FP64
        # 4th-gen tensor cores, dense, per SM per clock (H100 datasheet: TF32 494.7, FP16/BF16 989.4,
        # FP8/INT8 1978.9 T(FL)OP/s dense at 1830 MHz; FP64 tensor 66.9 TFLOP/s at 1980 MHz).
        tensor_fma_per_sm={"fp64": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048, "fp8": 4096, "int8": 4096},
        boost_clock_mhz=1980,                             # H100 datasheet: FP32 66.9 TFLOP/s = 132 x 128 x 2 x 1.98 GHz
        tensor_clock_mhz=1830,                            # the clock NVIDIA quotes tensor-core peaks at
        memory_bandwidth_gbs=3350, memory_gib=80,         # H100 SXM datasheet: 3.35 TB/s HBM3
        l2_kib=51200, smem_per_sm_kib=228, registers_per_sm_kib=256,  # H100 whitepaper: 50 MB L2, 228 KB smem/SM
        sparsity=True,                                    # Foundations lecture table: x2 with sparsity
        source="NVIDIA H100 datasheet and whitepaper; the Foundations lecture's table gives preliminary 60/500/1000",
    ),
    "H100-PCIe": _spec(
        name="H100-PCIe", architecture="Hopper", compute_capability=(9, 0),
        sms=114,                                          # H100 whitepaper: 114 SMs on PCIe
        cuda_fma_per_sm={"fp64": 64, "fp32": 128, "fp16": 256, "bf16": 256},
        tensor_fma_per_sm={"fp64": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048, "fp8": 4096, "int8": 4096},
        boost_clock_mhz=1755,                             # H100 PCIe datasheet: FP32 51 TFLOP/s = 114 x 128 x 2 x 1.755 GHz
        tensor_clock_mhz=1620,                            # BF16 756 TFLOP/s dense = 114 x 2048 x 2 x 1.62 GHz
        memory_bandwidth_gbs=2000, memory_gib=80,         # H100 PCIe datasheet: 2 TB/s HBM2e
        l2_kib=51200, smem_per_sm_kib=228, registers_per_sm_kib=256,
        sparsity=True,
        source="NVIDIA H100 datasheet; the Foundations lecture's table gives preliminary 48/400/800",
    ),
    "H200": _spec(
        name="H200", architecture="Hopper", compute_capability=(9, 0),
        sms=132,                                          # same GH100 configuration as H100 SXM
        cuda_fma_per_sm={"fp64": 64, "fp32": 128, "fp16": 256, "bf16": 256},
        tensor_fma_per_sm={"fp64": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048, "fp8": 4096, "int8": 4096},
        boost_clock_mhz=1980, tensor_clock_mhz=1830,      # H200 datasheet quotes the H100 SXM peaks
        memory_bandwidth_gbs=4800, memory_gib=141,        # H200 datasheet: 141 GB HBM3e at 4.8 TB/s
        l2_kib=61440,                                     # torch.cuda.get_device_properties on an H200 (2026-10): 60 MB
        smem_per_sm_kib=228, registers_per_sm_kib=256,
        sparsity=True,
        source="NVIDIA H200 datasheet; L2 read from torch on an H200",
    ),
})


def get_spec(spec_or_name: GPUSpec | str) -> GPUSpec:
    """A ``GPUSpec`` from itself or from a name in ``SPECS`` (case and '-'/' ' insensitive)."""
    if isinstance(spec_or_name, GPUSpec):
        return spec_or_name
    if not isinstance(spec_or_name, str):
        raise TypeError(f"expected a GPUSpec or a GPU name, got {type(spec_or_name).__name__}")
    want = spec_or_name.replace(" ", "").replace("_", "-").lower()
    for key, spec in SPECS.items():
        if key.lower() == want or key.replace("-", "").lower() == want.replace("-", ""):
            return spec
    raise KeyError(f"unknown GPU {spec_or_name!r}; known: {', '.join(SPECS)}")


# Dense peaks in FLOP/s (OP/s for integer dtypes), as the datasheets quote them: "cuda" on the
# ordinary cores at the boost clock, "tensor" on the tensor cores at ``GPUSpec.clock_hz(tensor=True)``
# (FP32 accumulation). Each is its GPU's SMs x FMA per clock per SM x 2 x clock (tests/test_hardware.py
# checks every entry against the units above); 2:4 sparsity doubles a tensor-core figure.
PEAKS: Mapping[str, Mapping[str, Mapping[str, float]]] = MappingProxyType({name: MappingProxyType(
    {unit: MappingProxyType(table) for unit, table in units.items()}) for name, units in {
    "P100": {"cuda": {"fp64": 5.30432e12, "fp32": 10.60864e12, "fp16": 21.21728e12},
             "tensor": {}},
    "V100": {"cuda": {"fp64": 7.8336e12, "fp32": 15.6672e12, "fp16": 31.3344e12},
             "tensor": {"fp16": 125.3376e12}},
    "T4": {"cuda": {"fp64": 0.2544e12, "fp32": 8.1408e12, "fp16": 16.2816e12},
           "tensor": {"fp16": 65.1264e12, "int8": 130.2528e12, "int4": 260.5056e12}},
    "A100": {"cuda": {"fp64": 9.74592e12, "fp32": 19.49184e12, "fp16": 77.96736e12, "bf16": 38.98368e12},
             "tensor": {"fp64": 19.49184e12, "tf32": 155.93472e12, "fp16": 311.86944e12, "bf16": 311.86944e12,
                        "int8": 623.73888e12, "int4": 1247.47776e12}},
    "RTX3090": {"cuda": {"fp64": 0.55596e12, "fp32": 35.58144e12, "fp16": 35.58144e12},
                "tensor": {"tf32": 35.58144e12, "fp16": 71.16288e12, "bf16": 71.16288e12, "int8": 284.65152e12}},
    "H100-SXM": {"cuda": {"fp64": 33.45408e12, "fp32": 66.90816e12, "fp16": 133.81632e12, "bf16": 133.81632e12},
                 "tensor": {"fp64": 66.90816e12, "tf32": 494.71488e12, "fp16": 989.42976e12, "bf16": 989.42976e12,
                            "fp8": 1978.85952e12, "int8": 1978.85952e12}},
    "H100-PCIe": {"cuda": {"fp64": 25.60896e12, "fp32": 51.21792e12, "fp16": 102.43584e12, "bf16": 102.43584e12},
                  "tensor": {"fp64": 51.21792e12, "tf32": 378.22464e12, "fp16": 756.44928e12, "bf16": 756.44928e12,
                             "fp8": 1512.89856e12, "int8": 1512.89856e12}},
    "H200": {"cuda": {"fp64": 33.45408e12, "fp32": 66.90816e12, "fp16": 133.81632e12, "bf16": 133.81632e12},
             "tensor": {"fp64": 66.90816e12, "tf32": 494.71488e12, "fp16": 989.42976e12, "bf16": 989.42976e12,
                        "fp8": 1978.85952e12, "int8": 1978.85952e12}},
}.items()})

# The peaks of the GPU torch sees when it is not one of SPECS as is (``detect``): its name -> (spec, peaks).
_DETECTED: dict[str, tuple[GPUSpec, Mapping[str, Mapping[str, float]]]] = {}


def _recorded_peaks(spec: GPUSpec) -> Mapping[str, Mapping[str, float]]:
    """The peaks kept for ``spec``: a GPU of ``SPECS`` (the very spec, not one with other units
    under its name) or the GPU ``detect`` described."""
    known = SPECS.get(spec.name)
    if known is not None and (spec is known or spec == known):
        return PEAKS[spec.name]
    detected = _DETECTED.get(spec.name)
    if detected is not None and (detected[0] is spec or detected[0] == spec):
        return detected[1]
    raise ValueError(f"no recorded peaks for the GPU {spec.name!r}: gpudl.hardware keeps the datasheet peaks of the "
                     f"GPUs in SPECS ({', '.join(SPECS)}) and of the GPU torch sees (hardware.detect()); "
                     "another GPU's peak is its SMs x FMA per clock per SM x 2 x clock")


@reference
def peak_flops(spec_or_name: GPUSpec | str, dtype: Any = "fp32", *,
               tensor_cores: bool = True, sparse: bool = False) -> float:
    """Peak throughput in FLOP/s (OP/s for integer dtypes) of a GPU of ``SPECS`` (or the one
    ``detect`` returns), from its datasheet figures (``PEAKS``).

    ``tensor_cores=True`` uses the tensor-core rate when the GPU has one for ``dtype``
    and the CUDA-core rate otherwise (FP32 proper never runs on tensor cores: TF32 does).
    ``sparse=True`` doubles a tensor-core rate on GPUs with 2:4 structured sparsity.

    >>> round(peak_flops("V100", "fp16") / 1e12, 1)
    125.3
    >>> round(peak_flops("A100", "tf32") / 1e12, 1), round(peak_flops("A100", "fp32") / 1e12, 1)
    (155.9, 19.5)
    """
    spec = get_spec(spec_or_name)
    dt = normalize_dtype(dtype)
    peaks = _recorded_peaks(spec)
    use_tensor = tensor_cores and dt in peaks["tensor"]
    if sparse:
        if not use_tensor:
            raise ValueError(f"sparse=True needs tensor cores that run {dt} on the {spec.name}")
        if not spec.sparsity:
            raise ValueError(f"the {spec.name} ({spec.architecture}) has no 2:4 structured sparsity")
    if use_tensor:
        peak = peaks["tensor"][dt]
    elif dt in peaks["cuda"]:
        peak = peaks["cuda"][dt]
    elif dt == "tf32":
        raise ValueError(f"TF32 is a tensor-core mode; the {spec.name} has no TF32 tensor cores"
                         if tensor_cores else "TF32 exists only on tensor cores: pass tensor_cores=True")
    else:
        where = "tensor cores or CUDA cores" if tensor_cores else "CUDA cores"
        raise ValueError(f"the {spec.name} has no {where} rate for {dt}")
    return peak * (2 if sparse else 1)


@reference
def peak_bandwidth(spec_or_name: GPUSpec | str) -> float:
    """DRAM bandwidth in bytes/s (the datasheet's GB/s, 1 GB = 1e9 bytes)."""
    return get_spec(spec_or_name).memory_bandwidth_gbs * 1e9


@reference
def ridge_point(spec_or_name: GPUSpec | str, dtype: Any = "fp16", *, tensor_cores: bool = True) -> float:
    """Arithmetic intensity (FLOP/byte) above which a kernel can be compute-bound."""
    return peak_flops(spec_or_name, dtype, tensor_cores=tensor_cores) / peak_bandwidth(spec_or_name)


# ---------------------------------------------------------------------------------------
# The current device

# Which entry of SPECS a torch device name belongs to; the first match wins.
_NAME_PATTERNS = (
    ("H200", "H200"), ("H100 PCIE", "H100-PCIe"), ("H100", "H100-SXM"), ("A100", "A100"),
    ("V100", "V100"), ("T4", "T4"), ("3090", "RTX3090"), ("P100", "P100"),
)

# Per compute capability, for GPUs not in SPECS: CUDA-core and dense tensor-core FMA per
# clock per SM (FP32 accumulate). From NVIDIA's architecture whitepapers.
_ARCH_RATES = {
    (7, 0): ("Volta", {"fp64": 32, "fp32": 64, "fp16": 128}, {"fp16": 512}),
    (7, 5): ("Turing", {"fp64": 2, "fp32": 64, "fp16": 128}, {"fp16": 512, "int8": 1024}),
    (8, 0): ("Ampere", {"fp64": 32, "fp32": 64, "fp16": 256}, {"tf32": 512, "fp16": 1024, "bf16": 1024, "int8": 2048}),
    (8, 6): ("Ampere", {"fp64": 2, "fp32": 128, "fp16": 128}, {"tf32": 128, "fp16": 256, "bf16": 256, "int8": 1024}),
    (8, 9): ("Ada", {"fp64": 2, "fp32": 128, "fp16": 128}, {"tf32": 128, "fp16": 256, "bf16": 256, "fp8": 512, "int8": 1024}),
    (9, 0): ("Hopper", {"fp64": 64, "fp32": 128, "fp16": 256, "bf16": 256}, {"tf32": 1024, "fp16": 2048, "bf16": 2048, "fp8": 4096, "int8": 4096}),
}


def nvidia_smi(query: str) -> str | None:
    """``nvidia-smi --query-gpu=QUERY`` for GPU 0, or None where there is no nvidia-smi."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA device (whatever ``GPUDL_DEVICE`` says)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def device() -> str:
    """"cuda" when labs should run on the GPU, else "cpu". ``GPUDL_DEVICE=cpu`` forces the CPU."""
    forced = os.environ.get("GPUDL_DEVICE", "").strip().lower()
    if forced in ("cpu", "cuda"):
        if forced == "cuda" and not cuda_available():
            raise RuntimeError("GPUDL_DEVICE=cuda but torch sees no CUDA device "
                               "(is this a CPU build of torch? run `gpudl doctor`)")
        return forced
    if forced:
        raise ValueError(f"GPUDL_DEVICE must be 'cpu' or 'cuda', got {forced!r}")
    return "cuda" if cuda_available() else "cpu"


def configure() -> str:
    """Choose the device once, at import: without a GPU, Triton kernels run in Triton's
    interpreter on the CPU, so ``TRITON_INTERPRET=1`` must be set before any kernel is
    defined. Returns the device."""
    dev = device()
    if dev == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    configure_numba(dev)
    return dev


def pick(*, cpu: Any, cuda: Any) -> Any:
    """Problem sizes for the current device: ``pick(cpu=256, cuda=4096)``."""
    return cuda if device() == "cuda" else cpu


def detect() -> GPUSpec | None:
    """The spec of the GPU torch sees, or None when there is none.

    A known GPU maps to its entry in ``SPECS``. Any other gets a spec built from what torch
    and nvidia-smi report (SMs, compute capability, clock, memory) and per-architecture
    rates, with ``estimated=True``; ``peak_flops`` answers for it with peaks estimated the same
    way (a known GPU's with another SM count: its datasheet peaks scaled by the SMs).
    """
    if not cuda_available():
        return None
    import torch

    props = torch.cuda.get_device_properties(0)
    name = props.name
    upper = name.upper()
    for pattern, key in _NAME_PATTERNS:
        if pattern in upper:
            spec = SPECS[key]
            if props.multi_processor_count != spec.sms:  # a cut-down or unusual variant
                variant = replace(spec, name=f"{key} ({name})", sms=props.multi_processor_count, estimated=True)
                scale = variant.sms / spec.sms
                _DETECTED[variant.name] = (variant, {unit: {dt: peak * scale for dt, peak in table.items()}
                                                     for unit, table in PEAKS[key].items()})
                return variant
            return spec
    cc = (props.major, props.minor)
    older = [k for k in _ARCH_RATES if k <= cc]   # a newer GPU gets the newest rates we know
    arch, cuda_rates, tensor_rates = _ARCH_RATES[max(older)] if older else ("unknown", {"fp32": 64}, {})
    clock = nvidia_smi("clocks.max.sm")
    clock_mhz = float(clock) if clock and clock.replace(".", "").isdigit() else 1500.0
    estimated = GPUSpec(
        name=name, architecture=arch, compute_capability=cc, sms=props.multi_processor_count,
        cuda_fma_per_sm=cuda_rates, tensor_fma_per_sm=tensor_rates, boost_clock_mhz=clock_mhz,
        memory_bandwidth_gbs=float("nan"), memory_gib=props.total_memory / 2**30,
        l2_kib=int(getattr(props, "L2_cache_size", 0)) // 1024, smem_per_sm_kib=0, registers_per_sm_kib=0,
        sparsity=cc >= (8, 0), estimated=True,
        source="estimated from torch.cuda.get_device_properties and per-architecture rates",
    )
    per_clock = {unit: {dt: props.multi_processor_count * fma * 2 for dt, fma in rates.items()}
                 for unit, rates in (("cuda", cuda_rates), ("tensor", tensor_rates))}
    _DETECTED[name] = (estimated, {unit: {dt: flop * clock_mhz * 1e6 for dt, flop in table.items()}
                                   for unit, table in per_clock.items()})
    return estimated


# ---------------------------------------------------------------------------------------
# SM resource limits by compute capability (unit 04: occupancy)
#
# ``SMLimits``   what one SM can hold at once: blocks, warps, registers, shared memory, and
#                the granularities the hardware allocates them in
# ``SM_LIMITS``  the limits by compute capability (Pascal GP100 to Hopper)
# ``sm_limits``  the limits of a GPUSpec, a name in SPECS or a compute capability
# ``configure_numba``  run by ``configure``: numba-cuda's simulator when there is no GPU
#
# Sources: the CUDA C++ Programming Guide's table "Technical Specifications per Compute
# Capability" and the occupancy calculator shipped with CUDA (cuda_occupancy.h: register
# allocation unit, register sub-partitions, shared-memory granularity and carve-outs). The
# lecture's Nsight Compute table (80-SM Volta: 32 / 21 / 16 / 384 blocks) follows from the
# (7, 0) row.

@dataclass(frozen=True)
class SMLimits:
    """What one streaming multiprocessor of a compute capability can hold at once.

    Registers are allocated per warp, ``register_allocation_unit`` registers at a time, from
    one of ``register_sub_partitions`` equal slices of the register file (one per warp
    scheduler). Shared memory is allocated per block in units of
    ``shared_memory_granularity`` bytes, plus ``reserved_shared_memory_per_block`` that the
    driver keeps for itself (Ampere on); the SM's shared memory is a carve-out of its L1 that
    can be any of ``shared_memory_carveouts_kib``, the largest being ``shared_memory_per_sm``.
    """

    compute_capability: tuple[int, int]
    max_blocks_per_sm: int
    max_warps_per_sm: int
    shared_memory_per_sm: int                 # bytes, the largest carve-out
    shared_memory_per_block_optin: int        # bytes a block may ask for by opting in
    shared_memory_carveouts_kib: tuple[int, ...]
    shared_memory_per_block: int = 48 * 1024  # bytes a block gets without opting in
    reserved_shared_memory_per_block: int = 0
    shared_memory_granularity: int = 256      # bytes
    registers_per_sm: int = 65536             # 32-bit registers
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    register_allocation_unit: int = 256       # registers, allocated per warp
    register_sub_partitions: int = 4
    warp_size: int = 32
    max_threads_per_block: int = 1024

    def __post_init__(self) -> None:
        positive = ("max_blocks_per_sm", "max_warps_per_sm", "shared_memory_per_sm", "registers_per_sm",
                    "register_allocation_unit", "register_sub_partitions", "warp_size",
                    "shared_memory_granularity", "max_threads_per_block")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"SMLimits {self.compute_capability}: {name} must be positive, got {getattr(self, name)}")
        if self.shared_memory_per_sm != max(self.shared_memory_carveouts_kib) * 1024:
            raise ValueError(f"SMLimits {self.compute_capability}: shared_memory_per_sm must be the largest carve-out")

    @property
    def max_threads_per_sm(self) -> int:
        """Resident threads per SM: max warps x warp size (2048 on V100, A100, H100)."""
        return self.max_warps_per_sm * self.warp_size


def _limits(cc: tuple[int, int], blocks: int, warps: int, smem_kib: int, optin_kib: int,
            carveouts: tuple[int, ...], **kw: Any) -> SMLimits:
    return SMLimits(compute_capability=cc, max_blocks_per_sm=blocks, max_warps_per_sm=warps,
                    shared_memory_per_sm=smem_kib * 1024, shared_memory_per_block_optin=optin_kib * 1024,
                    shared_memory_carveouts_kib=carveouts, **kw)


_AMPERE_ON = {"reserved_shared_memory_per_block": 1024, "shared_memory_granularity": 128}

SM_LIMITS: Mapping[tuple[int, int], SMLimits] = MappingProxyType({
    (6, 0): _limits((6, 0), 32, 64, 64, 48, (64,), register_sub_partitions=2),               # P100
    (6, 1): _limits((6, 1), 32, 64, 96, 48, (96,)),
    (7, 0): _limits((7, 0), 32, 64, 96, 96, (0, 8, 16, 32, 64, 96)),                         # V100
    (7, 5): _limits((7, 5), 16, 32, 64, 64, (32, 64)),                                       # T4
    (8, 0): _limits((8, 0), 32, 64, 164, 163, (0, 8, 16, 32, 64, 100, 132, 164), **_AMPERE_ON),  # A100
    (8, 6): _limits((8, 6), 16, 48, 100, 99, (0, 8, 16, 32, 64, 100), **_AMPERE_ON),          # RTX 3090
    (8, 9): _limits((8, 9), 24, 48, 100, 99, (0, 8, 16, 32, 64, 100), **_AMPERE_ON),          # Ada
    (9, 0): _limits((9, 0), 32, 64, 228, 227, (0, 8, 16, 32, 64, 100, 132, 164, 196, 228),
                    **_AMPERE_ON),                                                            # H100, H200
})


def sm_limits(spec_or_cc: GPUSpec | str | tuple[int, int]) -> SMLimits:
    """The SM limits of a GPU (a ``GPUSpec`` or a name in ``SPECS``) or of a compute capability.

    A compute capability newer than any known one of the same major version gets that
    version's newest limits; an unknown major version is an error.

    >>> sm_limits("A100").max_threads_per_sm * SPECS["A100"].sms
    221184
    """
    if isinstance(spec_or_cc, (GPUSpec, str)):
        cc = get_spec(spec_or_cc).compute_capability
    else:
        cc = tuple(int(v) for v in spec_or_cc)
        if len(cc) != 2:
            raise ValueError(f"a compute capability is (major, minor), got {spec_or_cc!r}")
    if cc in SM_LIMITS:
        return SM_LIMITS[cc]
    same_major = [k for k in SM_LIMITS if k[0] == cc[0] and k <= cc]
    if same_major:
        return replace(SM_LIMITS[max(same_major)], compute_capability=cc)
    known = ", ".join(f"{a}.{b}" for a, b in SM_LIMITS)
    raise ValueError(f"no SM limits for compute capability {cc[0]}.{cc[1]}; known: {known}")


def configure_numba(dev: str) -> None:
    """Without a GPU, numba-cuda kernels run in its CUDA simulator, which must be chosen
    before numba is imported (``NUMBA_ENABLE_CUDASIM=1``). Small teaching grids and host
    arrays are what the labs use on purpose, so numba's warnings about them stay off."""
    if dev == "cpu":
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    import numpy as np
    if not hasattr(np, "row_stack"):        # numba-cuda <= 0.30 registers it; NumPy 2.5 removed it
        np.row_stack = np.vstack
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    os.environ.setdefault("NUMBA_CUDA_WARN_ON_IMPLICIT_COPY", "0")
