# mutant: efficiency as the last wave's fill only
# cell: waves
# replace: return grid / per_wave, grid / (count * per_wave)
# with: return grid / per_wave, (grid - (count - 1) * per_wave) / per_wave
