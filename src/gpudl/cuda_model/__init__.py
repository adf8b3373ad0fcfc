"""The CUDA programming model (unit 04), one module per idea.

``launch``     CUDA's dim3 and the threads a launch starts
``occupancy``  the four resources that limit the blocks an SM holds, and the threads a GPU holds
``memory``     a warp's addresses: strided global accesses, columns of a shared-memory tile
``checker``    runs a numba-cuda kernel thread by thread, recording every access: out-of-bounds
               indices, missing guards, races, barriers not every thread reaches, accesses per thread
``device``     what a real GPU says: the driver's occupancy, a kernel's registers, compute-sanitizer
``kernels``    the benchmark's kernels in numba-cuda (imported on demand: it imports numba)

What lab 04 asks students to write (launch sizes, indices, the kernels, occupancy, waves,
sectors, bank conflicts) is not here. Public names of the pure modules are re-exported here;
``checker``, ``device`` and ``kernels`` are imported by name.
"""
from .launch import dim3, thread_count
from .memory import column_indices, padded_width, strided_addresses
from .occupancy import LIMITS, resident_threads

__all__ = ["dim3", "thread_count", "LIMITS", "resident_threads", "strided_addresses", "column_indices",
           "padded_width"]
