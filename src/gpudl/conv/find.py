"""``find_algorithms``: run every candidate algorithm, time it, rank (``cudnnFindConvolutionForwardAlgorithm``).

Public names, in order: ``AlgoPerf``, ``DEFAULT_FIND``, ``find_algorithms``, ``LECTURE_GV100_3X3``
(``SEED_GV100_3X3``: the same, by its old name).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from .. import timing
from .algorithms import conv_forward, workspace_size
from .descriptors import (Algo, ConvolutionDescriptor, FilterDescriptor, Status, TensorDescriptor, _algo,
                          output_dims, supported)

@dataclass(frozen=True)
class AlgoPerf:
    """One row of find's answer (cuDNN's ``cudnnConvolutionFwdAlgoPerf_t``): the algorithm,
    whether it ran, its median time in seconds (inf when it did not run), its workspace in bytes."""

    algo: Algo
    status: Status
    time: float
    memory: int
    note: str = ""
    measurement: timing.Measurement | None = field(default=None, compare=False, repr=False)

    @property
    def time_ms(self) -> float:
        return self.time * 1e3

    def __str__(self) -> str:
        t = f"{self.time_ms:.3f} ms" if math.isfinite(self.time) else "-"
        return f"algo: {self.algo.value}, {t}, {self.memory} B, status: {self.status.value}" + (
            f" ({self.note})" if self.note else "")


DEFAULT_FIND = (Algo.GEMM, Algo.IMPLICIT_GEMM, Algo.FFT, Algo.WINOGRAD)


def find_algorithms(x: torch.Tensor, w: torch.Tensor, conv_desc: ConvolutionDescriptor,
                    algos: Sequence[Any] | None = None, *, workspace_limit: int | None = None,
                    requested: int | None = None, timer: Callable[..., timing.Measurement] | None = None,
                    **timer_kwargs: Any) -> list[AlgoPerf]:
    """``cudnnFindConvolutionForwardAlgorithm``: run every candidate, time it, rank.

    Candidates (default: GEMM, IMPLICIT_GEMM, FFT, WINOGRAD; DIRECT is the slow reference) that
    cannot do this convolution are reported NOT_SUPPORTED, those needing more workspace than
    ``workspace_limit`` bytes ALLOC_FAILED, without running. The others are timed by ``timer``
    (default ``gpudl.timing.measure`` on the tensors' device: warm-up, CUDA events on a GPU) with
    the workspace allocated beforehand. Returns the successes by increasing median time, then
    the rest; at most ``requested`` rows.
    """
    x_desc, w_desc = TensorDescriptor.from_tensor(x), FilterDescriptor(w.dtype, "NCHW", *w.shape)
    output_dims(x_desc, w_desc, conv_desc)
    if timer is None:
        device = "cuda" if x.is_cuda else "cpu"
        timer = lambda fn, **kw: timing.measure(fn, device=device, **kw)   # noqa: E731
    done, failed = [], []
    for a in (DEFAULT_FIND if algos is None else [_algo(a) for a in algos]):
        status, reason = supported(a, x_desc, w_desc, conv_desc)
        if status is not Status.SUCCESS:
            failed.append(AlgoPerf(a, status, math.inf, 0, reason))
            continue
        memory = workspace_size(a, x_desc, w_desc, conv_desc)
        if workspace_limit is not None and memory > workspace_limit:
            failed.append(AlgoPerf(a, Status.ALLOC_FAILED, math.inf, memory,
                                   f"needs {memory} B, the limit is {workspace_limit} B"))
            continue
        ws = torch.empty(memory, dtype=torch.uint8, device=x.device) if a is Algo.GEMM else None
        m = timer(lambda a=a, ws=ws: conv_forward(x, w, conv_desc, a, workspace=ws), **timer_kwargs)
        done.append(AlgoPerf(a, Status.SUCCESS, m.median, memory, measurement=m))
    ranked = sorted(done, key=lambda perf: perf.time) + failed
    return ranked[:requested] if requested is not None else ranked



# The lecture's table ("Accelerating AI"): 128x128x128x128 FP32 NCHW on a Quadro GV100, 3x3 filters (ms, MB).
LECTURE_GV100_3X3 = {"GEMM": (0.76, 72), "IMPLICIT_GEMM": (0.62, 0), "IMPLICIT_PRECOMP_GEMM": (0.47, 0.01),
                  "FFT": (45.3, 8322), "FFT_TILING": (3.69, 70), "WINOGRAD": (0.26, 1.56),
                  "WINOGRAD_NONFUSED": (2.73, 578)}
SEED_GV100_3X3 = LECTURE_GV100_3X3          # its old name
