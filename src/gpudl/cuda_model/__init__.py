"""The CUDA programming model (unit 04), one module per idea.

``launch``     grid size for n elements, idle threads, global indices in 1-D, 2-D and 3-D
``occupancy``  blocks per SM with the limiting resource and each limit; waves and tail efficiency
``memory``     coalescing as 32-byte sectors; shared-memory banks, conflicts and padding
``checker``    runs a numba-cuda kernel thread by thread, recording every access: out-of-bounds
               indices, missing guards, races, barriers not every thread reaches, accesses per thread
``device``     what a real GPU says: the driver's occupancy, a kernel's registers, compute-sanitizer
``kernels``    the lecture's kernels in numba-cuda (imported on demand: it imports numba)

The functions a lab asks students to write are marked ``@reference``. Public names of the
pure modules are re-exported here; ``checker``, ``device`` and ``kernels`` are imported by name.
"""
from .launch import dim3, global_index, grid_for, grid_size, idle_threads, linear_index, thread_count
from .memory import (bank_conflicts, column_indices, load_efficiency, padded_width, sectors, strided_addresses,
                     strided_sectors)
from .occupancy import LIMITS, Occupancy, Waves, occupancy, resident_threads, waves

__all__ = ["grid_size", "idle_threads", "dim3", "global_index", "linear_index", "thread_count", "grid_for",
           "occupancy", "Occupancy", "LIMITS", "waves", "Waves", "resident_threads",
           "sectors", "strided_addresses", "strided_sectors", "load_efficiency", "bank_conflicts",
           "column_indices", "padded_width"]
