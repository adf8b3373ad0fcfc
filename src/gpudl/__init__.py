"""gpudl: how deep learning runs on GPUs, as reference kernels, labs and their grader.

Importing gpudl chooses the device once: without a GPU (or with ``GPUDL_DEVICE=cpu``)
Triton kernels run in Triton's interpreter, so ``TRITON_INTERPRET=1`` is set here,
before any kernel is defined.
"""
from .hardware import configure as _configure

DEVICE = _configure()

from .hardware import device, detect, pick  # noqa: E402

__version__ = "0.1.0"
__all__ = ["DEVICE", "device", "detect", "pick", "__version__"]
