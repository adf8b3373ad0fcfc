# mutant: compares the DRAM fetch with the multiply instead of the SRAM fetch
# cell: energy_ratio
ENERGY_RATIO = 128 / 0.2
