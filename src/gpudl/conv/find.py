"""What find reports (``cudnnConvolutionFwdAlgoPerf_t``), the algorithms it tries by default, and the lecture's table.

``cudnnFindConvolutionForwardAlgorithm`` runs every algorithm, times it and returns one record
per algorithm, the successes fastest first; ranking them is lab 05's ``find`` exercise.

Public names, in order: ``AlgoPerf``, ``DEFAULT_FIND``, ``LECTURE_GV100_3X3``
(``SEED_GV100_3X3``: the same, by its old name).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import timing
from .descriptors import Algo, Status


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


# The forward algorithms a find tries by default (DIRECT, the definition, is the slow reference).
DEFAULT_FIND = (Algo.GEMM, Algo.IMPLICIT_GEMM, Algo.FFT, Algo.WINOGRAD)


# The lecture's table ("Accelerating AI"): 128x128x128x128 FP32 NCHW on a Quadro GV100, 3x3 filters (ms, MB).
LECTURE_GV100_3X3 = {"GEMM": (0.76, 72), "IMPLICIT_GEMM": (0.62, 0), "IMPLICIT_PRECOMP_GEMM": (0.47, 0.01),
                  "FFT": (45.3, 8322), "FFT_TILING": (3.69, 70), "WINOGRAD": (0.26, 1.56),
                  "WINOGRAD_NONFUSED": (2.73, 578)}
SEED_GV100_3X3 = LECTURE_GV100_3X3          # its old name
