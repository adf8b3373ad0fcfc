# mutant: SRAM over DRAM
# cell: energy_ratio
ENERGY_RATIO = 2 / 128
