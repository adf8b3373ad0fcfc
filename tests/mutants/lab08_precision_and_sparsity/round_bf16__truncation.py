# mutant: truncates (keeps the top 16 bits) instead of rounding to nearest
# cell: round_bf16
# replace: rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
# with: rounded = u >> 16
