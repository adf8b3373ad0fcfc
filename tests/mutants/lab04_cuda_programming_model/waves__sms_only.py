# mutant: a wave taken as one block per SM: waves = grid / sms
# cell: waves
# replace: per_wave = blocks_per_sm * sms
# with: per_wave = sms
