# mutant: rounds ties away from zero (adds 0x8000) instead of to even
# cell: round_bf16
# replace: rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
# with: rounded = (u + 0x8000) >> 16
