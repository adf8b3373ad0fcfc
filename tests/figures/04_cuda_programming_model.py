"""Figures quoted in course/04_cuda_programming_model.ipynb, and how each is computed.

The lecture prints no graded answer (launch sizes, occupancy, waves, sectors and bank conflicts
are lab 04's exercises): its cells show kernels at work, the lecture's Nsight Compute table
as recorded, and pictures; the prose's numbers are checked here against the instructor's
references (``gpudl_instructor.references.lab04``)."""
from __future__ import annotations

import numpy as np

from gpudl import hardware
from gpudl.cuda_model import column_indices, padded_width, resident_threads, thread_count
from gpudl_instructor.references.lab04 import (bank_conflicts, global_index, grid_size, idle_threads, load_efficiency,
                                               occupancy, strided_sectors, waves)

from figures import Figure

_NSIGHT = occupancy("V100", 128, 17, 20)


def _owner(ns, block: int, thread: int) -> int:
    """The element the lecture's whoami kernel found thread ``thread`` of block ``block`` in."""
    return int(np.flatnonzero((ns["block_of"] == block) & (ns["thread_of"] == thread))[0])


def _h100_table(ns) -> int:
    """The H100's warp slots, once the lecture's recorded blocks per SM (its occupancy figure) are
    what the model gives for every block size and register count; -1 where one differs."""
    sizes = [int(t) for t in ns["sizes"]]
    for regs, recorded in ns["h100_blocks"].items():
        if recorded != [occupancy("H100-SXM", t, regs, 0).blocks_per_sm for t in sizes]:
            return -1
    return hardware.sm_limits("H100-SXM").max_warps_per_sm


FIGURES = [
    Figure("warps** of 32", 32, lambda ns: hardware.sm_limits("V100").warp_size),
    Figure("with 8 threads per block, owns element 21", 21, lambda ns: _owner(ns, 2, 5)),
    Figure("CUDA kernel launch with 196 blocks of 256 threads", 196, lambda ns: grid_size(50_000, 256)),
    Figure("of which 176 are idle", 176, lambda ns: idle_threads(50_000, 256)),
    Figure("72 threads in all", 72, lambda ns: int(ns["hits"].sum())),
    Figure("Fermi: 16 SMs of 32 scalar cores", 16, None, why="the lecture's Fermi slide: an input, not computed"),
    Figure("the P100 has 56 SMs enabled", 56, lambda ns: hardware.SPECS["P100"].sms),
    Figure("the V100 80", 80, lambda ns: hardware.SPECS["V100"].sms),
    Figure("\"P100: 50 SM's\"", 50, None, why="the deck's slip, quoted to be corrected by the 56 checked above"),
    Figure("gives the P100 56, as does NVIDIA's datasheet", 56, lambda ns: hardware.SPECS["P100"].sms),
    Figure("16,384 32-bit registers", 16384,
           lambda ns: hardware.sm_limits("V100").registers_per_sm // hardware.sm_limits("V100").register_sub_partitions),
    Figure("8 GPCs x 8 TPCs x 2 SMs", 8, None, why="the GA100 whitepaper's configuration, an input"),
    Figure("went from 512 (Fermi)", 512, lambda ns: ns["fermi_cores"]),
    Figure("to 5,120 (V100)", 5120, lambda ns: ns["volta_cores"]),
    Figure("6,912 (A100, 108 SMs x 64)", 6912, lambda ns: ns["a100_cores"]),
    Figure("128 SMs and", 128, lambda ns: ns["ga100_sms"]),
    Figure("8,192 FP32 cores", 8192, lambda ns: ns["ga100_cores"]),
    Figure("An A100 SM holds up to 2048 threads", 2048, lambda ns: ns["threads_per_sm"]),
    Figure("keeps 221,184 threads in flight", 221184, lambda ns: resident_threads("A100")),
    Figure("about 400 cycles", 400, None, why="the lecture's figure for global-memory latency, quoted"),
    Figure("512 or more threads per", 512, None, why="the lecture's rule of thumb, quoted"),
    Figure("with 2,048 the maximum", 2048, lambda ns: hardware.sm_limits("V100").max_threads_per_sm),
    Figure("17 x 32 = 544 become 768", 768, lambda ns: _NSIGHT.registers_per_warp),
    Figure("then holds 21 warps", 21, lambda ns: 16384 // _NSIGHT.registers_per_warp),
    Figure("84 per SM", 84, lambda ns: 4 * (16384 // _NSIGHT.registers_per_warp)),
    Figure("21 blocks of 4 warps", 21, lambda ns: ns["nsight_limits"]["registers"]),
    Figure("64 slots / 4 per block = 16", 16, lambda ns: ns["nsight_limits"]["warps"]),
    Figure("out of Volta's 96 KB: 384", 384, lambda ns: ns["nsight_limits"]["shared memory"]),
    Figure("Block slots: 32", 32, lambda ns: ns["nsight_limits"]["blocks"]),
    Figure("The smallest, 16 blocks per SM, wins", 16, lambda ns: ns["nsight_blocks"]),
    # the GPU the table does not name, and the table's shared-memory configuration
    Figure("4,132 blocks at 16 per SM in 3.23 waves need 80 SMs", 80, lambda ns: ns["sms_from_waves"], rtol=2e-3),
    Figure("4,132 blocks at 16 per SM in 3.23 waves need 80 SMs", 80, lambda ns: 4132 / (16 * 3.23), rtol=2e-3),
    Figure("64 warp slots with 32 block slots rule out Turing (32 and 16)", 32,
           lambda ns: hardware.SM_LIMITS[(7, 5)].max_warps_per_sm),
    Figure("64 warp slots with 32 block slots rule out Turing (32 and 16)", 16,
           lambda ns: hardware.SM_LIMITS[(7, 5)].max_blocks_per_sm),
    Figure("64 warp slots with 32 block slots rule out Turing (32 and 16)", 64,
           lambda ns: hardware.sm_limits("V100").max_warps_per_sm),
    Figure("is 49,152 bytes, 48 KB", 49152, lambda ns: ns["nsight_smem_config"]),
    Figure("blocks of 256 bytes fit 192 times, not the 384 it prints", 192,
           lambda ns: ns["smem_limit"]["48 KB (the table's configuration)"]),
    Figure("blocks of 256 bytes fit 192 times, not the 384 it prints", 192, lambda ns: 48 * 1024 // 256),
    Figure("blocks of 256 bytes fit 192 times, not the 384 it prints", 384,
           lambda ns: ns["smem_limit"]["96 KB (Volta's largest carve-out)"]),
    Figure("blocks of 256 bytes fit 192 times, not the 384 it prints", 384,
           lambda ns: occupancy("V100", 128, 17, 20).limits["shared memory"]),
    Figure("\"SM can concurrently execute up to 16 thread blocks\"", 16,
           lambda ns: min(ns["block_slots"][cc] for cc in ("7.5", "8.6"))),
    Figure("the P100, V100, A100 and H100 hold 32", 32,
           lambda ns: min(hardware.sm_limits(g).max_blocks_per_sm for g in ("P100", "V100", "A100", "H100-SXM"))),
    Figure("sizes that do not divide the 64-warp budget", 64, _h100_table),
    Figure("usually 128 to 256", 128, None, why="the lecture's launch-configuration advice, quoted"),
    Figure("launched 4,132 blocks at 16 blocks per SM on 80 SMs: 3.23 waves", 3.23,
           lambda ns: waves(4132, _NSIGHT.blocks_per_sm, hardware.SPECS["V100"].sms).waves, rtol=2e-3),
    # the table's second column
    Figure("3,369 / (16 x 80) = 2.63 waves", 2.63, lambda ns: ns["waves_model"][3369], rtol=2e-3),
    Figure("3,369 / (16 x 80) = 2.63 waves", 2.63, lambda ns: waves(3369, 16, 80).waves, rtol=2e-3),
    Figure("but it prints 42.11, which is 3,369 / 80", 42.11, lambda ns: 3369 / 80, rtol=1e-3),
    Figure("but it prints 42.11, which is 3,369 / 80", 42.11, lambda ns: ns["waves_printed"][3369], rtol=0),
    Figure("are 75% used overall", 75, lambda ns: 100 * waves(12, 1, 8).efficiency),
    Figure("room for four such", 4, lambda ns: occupancy("H100-SXM", 32, 32, 48 * 1024).blocks_per_sm),
    Figure("its 228 KB of shared memory", 228, lambda ns: hardware.sm_limits("H100-SXM").shared_memory_per_sm // 1024),
    Figure("the warp's 128 bytes are 4 sectors", 4, lambda ns: strided_sectors(1)),
    Figure("the same 32 values span 8 sectors", 8, lambda ns: strided_sectors(2)),
    Figure("32 sectors for 128 useful bytes", 32, lambda ns: strided_sectors(8)),
    Figure("32 bytes will be issued, and only 1 will be used", 32, lambda ns: 1 / load_efficiency([0], 1)),
    Figure("a 32-way conflict", 32, lambda ns: bank_conflicts(column_indices(32))),
    Figure("Padding each row to 33 words", 33, lambda ns: padded_width(32)),
]

# The lecture's recorded tables are what the model computes.
assert dict(_NSIGHT.limits) == {"blocks": 32, "warps": 16, "registers": 21, "shared memory": 384}
assert grid_size(50_000, 256) == 196 and idle_threads(50_000, 256) == 176 and global_index(2, 8, 5) == (21, 0, 0)
assert thread_count((3, 2), (4, 3)) == 72 and load_efficiency([0], 1) == 1 / 32
